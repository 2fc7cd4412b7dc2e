// A lock for critical sections of a few dozen instructions inside allocator hooks, where a
// pthread mutex would be too slow and std::mutex may not be used (a hook must never block in
// the kernel on something another hooked call could hold). Waiters spin with `pause`, then
// yield the CPU so that a preempted holder can run (2-core machines, many threads).
#pragma once

#include <sched.h>

#include <atomic>

namespace memprof::native {

class SpinLock {
 public:
  void lock() noexcept {
    for (unsigned spins = 0;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 128)
          __builtin_ia32_pause();
        else
          ::sched_yield();
      }
    }
  }
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

// lock_guard without <mutex>'s exception paths.
class SpinGuard {
 public:
  explicit SpinGuard(SpinLock& lock) noexcept : lock_(lock) { lock_.lock(); }
  ~SpinGuard() { lock_.unlock(); }
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;

 private:
  SpinLock& lock_;
};

}  // namespace memprof::native
