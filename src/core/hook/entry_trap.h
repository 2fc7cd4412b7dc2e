// A breakpoint that holds a function's entry while its first instructions are replaced.
//
// An entry hook's 5-byte jump covers several instructions of most prologues. Writing an int3
// over the first byte first (one byte: a thread executing the old instruction sees it whole or
// traps) stops new callers from starting the displaced instructions; one that traps is sent to
// `detour` (a relocated copy of them) by a SIGTRAP handler. From then on the only threads that
// can be between two displaced instructions are those that were there before the int3, and a
// thread that is blocked in a system call is known not to be (thread_parking.h): only running
// threads need to be stopped and looked at before the jump goes in.
//
// A thread that blocks SIGTRAP must never reach the int3: the kernel kills the process rather
// than leave a trap pending. Check any_thread_blocks_sigtrap first (and unblock it on the thread
// that writes the patch); a thread that blocks it afterwards, within the microseconds of the
// patch, while calling the function, is the one case this does not cover.
//
// The SIGTRAP handler stays installed once set, and every armed entry stays known to it: a
// thread may have trapped just before the jump replaced the int3 and get its signal later. A
// trap at any other address goes to the handler the program had before, or gets SIGTRAP's
// default action, as it would have without us.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <vector>

#include "core/util/result.h"

namespace memprof::hook {

// Writes an int3 over the first byte of the function at `start`; a thread that reaches it
// continues at `detour`, which must behave like the function. Call disarm_entry_trap when the
// jump is not written after all.
Status arm_entry_trap(uintptr_t start, uintptr_t detour);

// The same for many functions at once (one protection change per page, one serialization).
// One status per trap.
struct EntryTrap {
  uintptr_t start;
  uintptr_t detour;
};
std::vector<Status> arm_entry_traps(std::span<const EntryTrap> traps);

// The jump has replaced the int3 (a child forked from now on has the jump, not the int3).
void entry_trap_replaced(uintptr_t start);

// Puts back the first byte the int3 replaced. A child forked while the int3 was in place puts
// it back by itself.
Status disarm_entry_trap(uintptr_t start);

// In a forked child: puts back the first byte of every int3 the fork copied (the parent writes
// their jumps, the child never would). Idempotent; run by a pthread_atfork child handler
// registered with the first int3, and first thing by settle_hooks_after_fork (hook_change.h),
// so that a fork handler registered earlier (the agent's, which starts a thread that blocks
// every signal) calls settle_hooks_after_fork before anything that may reach an int3.
void put_back_entry_traps_in_child() noexcept;

// Whether one of `threads` (of this process) blocks SIGTRAP, or cannot be checked.
bool any_thread_blocks_sigtrap(std::span<const pid_t> threads);

}  // namespace memprof::hook
