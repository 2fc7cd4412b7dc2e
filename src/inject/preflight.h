// The checks of check_can_inject (inject.h) that need no look at the target's loaded objects:
// load_library runs these, then finds libc itself (which fails for a static program the same way).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "core/util/result.h"

namespace memprof::inject {

// No such process, a thread id, zombie, stopped, already traced, permissions, seccomp strict
// mode.
Status check_process_can_be_traced(pid_t pid);

// Room in the address space for memprof's agent under the process's RLIMIT_AS (ulimit -v): its
// libraries, threads and tables take ~45 MB of address space. Taking what a process has left
// made its own allocations fail, and Ruby exits when it cannot raise NoMemoryError ("[FATAL]
// failed to allocate memory"): refused unless kAgentAddressSpace is free, saying how to raise
// the limit. No limit, or an unreadable one: ok.
inline constexpr uint64_t kAgentAddressSpace = uint64_t{64} << 20;
Status check_address_space_room(pid_t pid);

// A process whose threads can run, so that its agent's thread can answer: refuses one stopped
// by SIGSTOP or by a tracer (a request would wait out its whole timeout). Other states pass.
Status check_process_can_answer(pid_t pid);

// "process N is being traced by another memprof ..." when a thread of `pid` has a tracer other
// than this process: a PTRACE_SEIZE refused with EPERM after the checks passed (two attaches
// at once) was explained as a permission problem.
std::optional<Error> traced_by_another(pid_t pid);

// For a failed dlopen: a sentence to append when the process runs under a seccomp filter (which
// may have refused dlopen's system calls: its rules cannot be read without CAP_SYS_ADMIN), or "".
std::string seccomp_hint(pid_t pid);

}  // namespace memprof::inject
