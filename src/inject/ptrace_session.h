// PtraceSession: the threads of one process that this process traces, seized with PTRACE_SEIZE
// (so the target sees no SIGSTOP and keeps running until interrupted) and detached on every path:
// the destructor interrupts whatever still runs, waits for it (bounded) and detaches it.
//
// No PTRACE_O_EXITKILL: if memprof dies, the kernel detaches the threads and the target lives.
// Every wait is bounded: waitpid(__WALL | WNOHANG) in a polling loop with a deadline.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/user.h>

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "core/util/result.h"

namespace memprof::inject {

// What waitpid reported for a traced thread.
struct StopEvent {
  enum class Kind {
    kInterrupted,  // the stop PTRACE_INTERRUPT asked for
    kSignal,       // signal-delivery-stop: `signal` is about to be delivered
    kGroupStop,    // the process is being stopped (SIGSTOP, SIGTSTP, ...): `signal`
    kExited,       // the thread is gone: `signal` killed it, or it exited with `exit_code`
    kTimedOut,     // no report before the deadline; the thread may still be running
    kSyscall,      // syscall-enter- or exit-stop (after resume(tid, 0, Until::kNextSyscall))
  };
  Kind kind = Kind::kTimedOut;
  int signal = 0;
  int exit_code = 0;
};

// "exited with status 3", "was killed by SIGKILL"
std::string describe_exit(const StopEvent& event);

class PtraceSession {
 public:
  explicit PtraceSession(pid_t pid) : pid_(pid) {}
  PtraceSession(const PtraceSession&) = delete;
  PtraceSession& operator=(const PtraceSession&) = delete;
  ~PtraceSession();

  pid_t pid() const { return pid_; }

  // Seizes thread `tid` (a no-op when already seized). ESRCH (the thread is gone) and EPERM are
  // errors; EPERM's text says why (Yama, uid, capabilities).
  Status seize(pid_t tid);
  bool is_seized(pid_t tid) const;
  Status interrupt(pid_t tid);
  // The next report of `tid`, or kTimedOut after `timeout`.
  Result<StopEvent> wait(pid_t tid, std::chrono::microseconds timeout);
  enum class Until { kAnyStop, kNextSyscall };
  // Resumes a stopped thread, delivering `signal` when it is at a signal-delivery-stop; with
  // Until::kNextSyscall it also stops at the next system call's entry or exit.
  Status resume(pid_t tid, int signal = 0, Until until = Until::kAnyStop);
  // Detaches a stopped thread (delivering `signal` at a signal-delivery-stop). A running one is
  // interrupted first; one that does not stop in time stays attached until this process exits.
  Status detach(pid_t tid, int signal = 0);

  Result<user_regs_struct> registers(pid_t tid) const;
  Status set_registers(pid_t tid, const user_regs_struct& regs) const;
  // The XSAVE area (x87, SSE, AVX, AVX-512, ... as this CPU has them).
  Result<std::vector<unsigned char>> vector_state(pid_t tid) const;
  Status set_vector_state(pid_t tid, std::vector<unsigned char> state) const;
  // At a kSyscall stop: whether it is the entry, the call's number, and the result at the exit.
  struct SyscallStop {
    bool entry = false;
    uint64_t number = 0;
    int64_t result = 0;
  };
  Result<SyscallStop> syscall_stop(pid_t tid) const;
  // Writes `bytes` through /proc/PID/mem, which a tracer may do on read-only pages (the code of
  // memprof's return path, mapped read and execute, never writable).
  Status write_through_mem_file(uint64_t address, std::span<const unsigned char> bytes) const;
  Status set_signal_mask(pid_t tid, uint64_t blocked) const;  // bit N-1: signal N
  Result<siginfo_t> signal_info(pid_t tid) const;
  Status set_signal_info(pid_t tid, const siginfo_t& info) const;

 private:
  struct Thread {
    pid_t tid = 0;
    bool stopped = false;
    bool gone = false;
  };
  Thread* find(pid_t tid);
  const Thread* find(pid_t tid) const;
  Status ptrace_error(const char* what, pid_t tid) const;

  pid_t pid_;
  std::vector<Thread> threads_;
};

}  // namespace memprof::inject
