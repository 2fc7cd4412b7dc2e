// Choosing the thread and the moment to run dlopen in: one that holds neither glibc's malloc lock
// nor the dynamic loader's lock, or dlopen would wait forever for a lock its own thread holds.
//
// Other threads keep running, so the locks they hold are released eventually. A candidate thread
// is interrupted; it is safe when its RIP is outside libc and the loader (in the program, another
// library, the vdso, JIT code), or when it is blocked in a waiting system call (read, poll, futex
// wait, nanosleep, ...) made by a libc wrapper. Otherwise it runs on for a few hundred
// microseconds and is interrupted again, until the timeout. The thread group leader is tried
// first, then the others.
#pragma once

#include <sys/types.h>
#include <sys/user.h>

#include <chrono>
#include <string>

#include "core/proc/remote_memory.h"
#include "core/util/result.h"
#include "inject/ptrace_session.h"
#include "inject/target_libc.h"

namespace memprof::inject {

struct ThreadVerdict {
  bool safe = false;
  std::string doing;  // "blocked in read in libc", "running malloc+0x42 in libc.so.6", ...
};

// Judges a thread stopped with registers `regs`.
ThreadVerdict judge_stopped_thread(const user_regs_struct& regs, const TargetLibc& libc,
                                   const proc::RemoteMemory& memory);

struct SafePoint {
  pid_t thread = 0;  // seized in the session and stopped (interrupt-stop)
  user_regs_struct regs{};
  std::string doing;
  std::chrono::steady_clock::time_point stopped_at;
};

// Finds a safe thread and moment in session.pid(). On failure the error names what each thread
// was doing. Threads not chosen are detached again.
Result<SafePoint> find_safe_point(PtraceSession& session, const TargetLibc& libc,
                                  std::chrono::milliseconds timeout);

}  // namespace memprof::inject
