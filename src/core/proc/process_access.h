// Whether and why this process may look into another one, in words a user can act on.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "core/util/result.h"

namespace memprof::proc {

// The real uid of a process, or nothing when it is gone or unreadable.
std::optional<uid_t> process_uid(pid_t pid);

// Ok when /proc/PID exists and the process has not ended; otherwise "no such process: PID", or
// that it has ended (a zombie), that it is a kernel thread (nothing to attach to or trace), or
// that PID is a thread's id (top -H, a log line), not its process's (check_not_a_thread).
Status check_process_exists(pid_t pid);

// "TID is a thread of process PID; give the process id PID instead" when the task whose
// /proc/TID/status is `status` is a thread other than its process's first one. /proc/TID
// exists for every thread (unlisted), so a thread id gets past a look at /proc alone.
Status check_not_a_thread(pid_t pid, std::string_view status);

// The state letter of /proc/PID/stat (R, S, D, T, Z, X, ...); '?' when it cannot be read.
char process_state(pid_t pid);

// Whether `pid` has ended: no such process, or a zombie its parent has not reaped yet.
bool process_gone(pid_t pid);

// Whether `pid` is a kernel thread (kthreadd, kworker/...): it has no program, no memory of its
// own, nothing to attach to or trace.
bool kernel_thread(pid_t pid);

// /proc/sys/kernel/yama/ptrace_scope, or nothing when Yama is not enabled.
std::optional<int> yama_ptrace_scope();
// Whether this process has CAP_SYS_PTRACE in its effective set.
bool has_cap_sys_ptrace();

// What decides, before trying, whether ptrace on a process is allowed.
struct AccessFacts {
  pid_t pid = 0;
  std::optional<uid_t> target_uid;  // real uid; nothing when unreadable
  uid_t our_uid = 0;                // effective uid
  bool cap_sys_ptrace = false;
  std::optional<int> yama_scope;
  bool we_are_ancestor = false;  // Yama scope 1 lets ancestors attach
};
AccessFacts access_facts(pid_t pid);

// The refusals that are certain from the facts, in the words of explain_access_denied: Yama
// scope 3, scope 2 without CAP_SYS_PTRACE, another uid without it, scope 1 for a process that is
// not a descendant (unless the target named memprof with prctl(PR_SET_PTRACER), which cannot be
// seen from outside). Ok otherwise: a security module or a non-dumpable process may still refuse.
Status predict_access(const AccessFacts& facts);

// Explains a refused ptrace or process_vm_readv on `pid` (EPERM/EACCES): Yama's scope and what it
// requires, CAP_SYS_PTRACE, and other users' processes. One sentence, no trailing newline.
std::string explain_access_denied(pid_t pid);

}  // namespace memprof::proc
