// Whether a thread of this process still exists: tgkill with signal 0 says ESRCH once it has
// exited. For per-thread state that the owning thread cannot give back itself (its TLS is gone).
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace memprof {

inline bool thread_exists(uint32_t tid) noexcept {
  int saved_errno = errno;
  bool gone = ::syscall(SYS_tgkill, ::getpid(), tid, 0) != 0 && errno == ESRCH;
  errno = saved_errno;
  return !gone;
}

}  // namespace memprof
