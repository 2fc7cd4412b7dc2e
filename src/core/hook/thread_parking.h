// Holds every other running thread of the process inside a signal handler for the few
// microseconds of a code patch, and tells where each other thread was stopped. An entry hook's
// 5-byte jump covers several instructions of most prologues (glibc's free: a 3-byte `test`,
// then `je`): a thread that has executed the first and not the next when the jump is written
// would resume in the middle of it. The patch is written only when no thread is stopped
// strictly inside the bytes being replaced (else the caller resumes them and tries again).
//
// A thread blocked in the kernel (sleeping, waiting on a lock or for I/O) can be spared the
// signal, which would cut a nanosleep, poll or epoll_wait short with EINTR: the kernel tells
// where it stopped (/proc/self/task/TID/syscall). Such a thread may wake while the patch is
// written, so it must not be able to enter the patched bytes then: entry hooks spare sleepers
// only with an int3 on the function's first byte (entry_trap.h).
//
// Between park() and resume() the parking thread must not call anything that may take a lock a
// parked thread holds -- malloc above all. So the thread list is read (and allocated) by
// prepare(), before anyone is parked, and park()/resume() only read /proc with raw system
// calls, send signals and spin.
//
// The signal is SIGRTMAX-2. Its handler stays installed once set (a signal still pending on a
// thread that had it blocked must never meet the default action, which kills the process);
// outside a parking it passes the signal to the handler that was there before, if any.
// Side effect on parked (running) threads: one entering a non-restartable system call
// (nanosleep, poll, epoll_wait, select) just then returns EINTR; others restart (SA_RESTART).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/util/result.h"

namespace memprof::hook {

// Whether thread `tid` of this process blocks `signal` (its status's SigBlk); nullopt when it
// cannot be told (the thread is gone). Raw system calls on the stack: no allocation, no lock.
std::optional<bool> thread_blocks_signal(pid_t tid, int signal) noexcept;

class ThreadParking {
 public:
  // Lists the other threads (allocates). One parking at a time per process: hold the patch lock.
  static Result<ThreadParking> prepare();
  ThreadParking(ThreadParking&& other) noexcept;
  ThreadParking& operator=(ThreadParking&&) = delete;
  ~ThreadParking();  // resumes

  // Signals the threads and waits up to `timeout_ms` for each to reach the handler. With
  // `spare_sleepers`, a thread blocked in the kernel is not signalled: where it stopped is read
  // instead. Threads that exited meanwhile are skipped. A thread that blocks the signal is
  // waited for a few milliseconds only (unreached() if it does not come), and not signalled
  // while asleep in the kernel (blocked(): where it stopped is known). Allocates nothing.
  void park(unsigned timeout_ms, bool spare_sleepers) noexcept;
  // Lets every parked thread go and waits until each has left the handler. Allocates nothing.
  void resume() noexcept;

  // True when a parked or blocked thread was stopped at an address in (begin, end): after its
  // current instruction boundary, inside a range that starts before it.
  bool any_stopped_inside(uintptr_t begin, uintptr_t end) const noexcept;
  size_t parked() const noexcept { return parked_; }
  // How many times this process parked its threads (each one stops every running thread).
  static uint64_t parkings_so_far() noexcept;
  size_t blocked() const noexcept { return blocked_; }  // in the kernel: not signalled
  const std::vector<pid_t>& threads() const noexcept { return threads_; }
  size_t unreached() const noexcept { return signalled_ > parked_ ? signalled_ - parked_ : 0; }

 private:
  ThreadParking() = default;
  struct Arrivals {
    size_t all = 0;
    size_t blocking = 0;  // threads that blocked the signal when it was sent
  };
  Arrivals count_parked() const noexcept;
  std::vector<pid_t> threads_;
  std::vector<std::string> syscall_paths_;  // /proc/self/task/TID/syscall of each thread
  std::vector<uintptr_t> blocked_at_;       // where the blocked ones stopped: blocked_ of them
  std::vector<bool> blocks_;                // per thread: it blocked the signal at the last park()
  size_t blocked_ = 0;
  size_t signalled_ = 0;
  size_t parked_ = 0;
  size_t signalled_blocking_ = 0;  // of signalled_: threads that blocked the signal then
  bool active_ = false;
};

}  // namespace memprof::hook
