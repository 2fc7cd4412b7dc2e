// Whether and why this process may look into another one, in words a user can act on.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "core/util/result.h"

namespace memprof::proc {

// Ok when /proc/PID exists; otherwise "no such process: PID".
Status check_process_exists(pid_t pid);

// /proc/sys/kernel/yama/ptrace_scope, or nothing when Yama is not enabled.
std::optional<int> yama_ptrace_scope();
// Whether this process has CAP_SYS_PTRACE in its effective set.
bool has_cap_sys_ptrace();

// Explains a refused ptrace or process_vm_readv on `pid` (EPERM/EACCES): Yama's scope and what it
// requires, CAP_SYS_PTRACE, and other users' processes. One sentence, no trailing newline.
std::string explain_access_denied(pid_t pid);

}  // namespace memprof::proc
