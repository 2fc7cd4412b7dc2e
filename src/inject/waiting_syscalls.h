// The system calls in which a thread merely waits (for input, a timer, a child, a signal, a futex
// wake-up). A thread stopped inside one of them from a libc wrapper holds no libc lock, so it may
// run dlopen: the kernel restarts the call afterwards.
#pragma once

#include <sys/user.h>

#include <cstdint>
#include <string>

namespace memprof::inject {

// Whether the syscall `regs` shows (orig_rax, with its arguments) is a waiting one. futex counts
// only for its wait operations: FUTEX_WAKE is how a lock holder releases a lock, so a thread in
// it may still hold another one.
bool is_waiting_syscall(const user_regs_struct& regs);

// "read", "futex", ... or "syscall 123".
std::string syscall_name(int64_t number);

}  // namespace memprof::inject
