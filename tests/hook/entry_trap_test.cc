// The int3 that holds a function's entry while an entry hook's jump is written: a caller that
// reaches it runs the detour, disarming puts the exact byte back, and a breakpoint that is not
// ours still does what it did without us.
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>

#include <gtest/gtest.h>

#include "core/hook/entry_trap.h"
#include "core/hook/hook_change.h"
#include "core/hook/patch.h"

namespace memprof::hook {
namespace {

__attribute__((noipa)) int held_function(int x) { return x + 1; }
__attribute__((noipa)) int detour_function(int x) { return x * 100; }

TEST(EntryTrap, ACallerThatReachesTheInt3RunsTheDetourAndDisarmingPutsTheByteBack) {
  const auto start = reinterpret_cast<uintptr_t>(&held_function);
  const uint8_t first_byte = *reinterpret_cast<const uint8_t*>(start);
  auto protection = page_protection(reinterpret_cast<const void*>(&held_function));
  ASSERT_TRUE(protection.ok()) << protection.message();
  ASSERT_TRUE(arm_entry_trap(start, reinterpret_cast<uintptr_t>(&detour_function)).ok());
  EXPECT_EQ(*reinterpret_cast<const uint8_t*>(start), 0xcc);
  EXPECT_EQ(held_function(3), 300);
  EXPECT_EQ(held_function(4), 400);
  ASSERT_TRUE(disarm_entry_trap(start).ok());
  EXPECT_EQ(*reinterpret_cast<const uint8_t*>(start), first_byte);
  EXPECT_EQ(held_function(3), 4);
  EXPECT_EQ(*page_protection(reinterpret_cast<const void*>(&held_function)), *protection);  // no page left writable
}

// A child forked while the int3 is in place never gets the jump (the parent writes it): it
// puts the first byte back itself, and calls the function unhooked.
TEST(EntryTrap, AChildForkedWhileTheInt3IsInPlaceGetsTheFirstByteBack) {
  const auto start = reinterpret_cast<uintptr_t>(&held_function);
  const uint8_t first_byte = *reinterpret_cast<const uint8_t*>(start);
  ASSERT_TRUE(arm_entry_trap(start, reinterpret_cast<uintptr_t>(&detour_function)).ok());
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0)
    ::_exit(*reinterpret_cast<const uint8_t*>(start) == first_byte && held_function(3) == 4 ? 0 : 1);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(*reinterpret_cast<const uint8_t*>(start), 0xcc);  // the parent's stays until disarmed
  ASSERT_TRUE(disarm_entry_trap(start).ok());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

// The agent's fork handler, registered before any int3 (at the agent's load), runs before the
// one that puts the bytes back, and it starts a thread with every signal blocked that calls
// malloc at once: when a fork caught malloc's int3 (a trace starting), that thread died of
// SIGTRAP with the child (a shell's `sleep`, 1 in 25 traces of a forking bash). The agent's
// handler calls settle_hooks_after_fork first; it must leave no int3 behind. The fork here
// runs no handler at all (as seen from a handler registered first), and the child blocks
// every signal before calling the function.
TEST(EntryTrap, SettlingHooksInAForkedChildPutsTheFirstByteBack) {
  const auto start = reinterpret_cast<uintptr_t>(&held_function);
  const uint8_t first_byte = *reinterpret_cast<const uint8_t*>(start);
  ASSERT_TRUE(arm_entry_trap(start, reinterpret_cast<uintptr_t>(&detour_function)).ok());
  const auto child = static_cast<pid_t>(::syscall(SYS_fork));
  ASSERT_GE(child, 0);
  if (child == 0) {
    sigset_t all;
    sigfillset(&all);
    ::sigprocmask(SIG_SETMASK, &all, nullptr);
    settle_hooks_after_fork();
    const bool restored = *reinterpret_cast<const uint8_t*>(start) == first_byte;
    ::_exit(held_function(3) == 4 && restored ? 0 : 1);  // called either way: an int3 kills
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(disarm_entry_trap(start).ok());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status)) : "status " + std::to_string(status));
}

// The program may set SIGTRAP's action after the first arming: bash puts back the actions it
// found at start in every subshell it forks, and a program may install a handler of its own.
// Each arming makes the handler ours again, chaining to the program's for traps that are not
// ours. Before: a traced bash's subshell, traced in turn, was killed by the first call to reach
// an int3 (`trace -x free -p SUBSHELL`: the patcher's own free). In a child, which that kills.
volatile sig_atomic_t g_programs_traps = 0;
void programs_trap_handler(int) { g_programs_traps = g_programs_traps + 1; }

int arm_call_and_disarm_in_child(void (*change_action)()) {
  const auto start = reinterpret_cast<uintptr_t>(&held_function);
  // Armed once in this process first: the handler is installed before the program's change.
  if (!arm_entry_trap(start, reinterpret_cast<uintptr_t>(&detour_function)).ok() || !disarm_entry_trap(start).ok())
    return 2;
  pid_t child = ::fork();
  if (child == 0) {
    change_action();
    if (!arm_entry_trap(start, reinterpret_cast<uintptr_t>(&detour_function)).ok()) ::_exit(3);
    const int held = held_function(3);
    if (!disarm_entry_trap(start).ok()) ::_exit(4);
    ::_exit(held == 300 ? 0 : 5);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(EntryTrap, AnActionResetByTheProgramIsMadeOursAgainAtTheNextArming) {
  EXPECT_EQ(arm_call_and_disarm_in_child([] { ::signal(SIGTRAP, SIG_DFL); }), 0) << "128 + 5: killed by SIGTRAP";
}

TEST(EntryTrap, AHandlerTheProgramInstalledStillGetsItsOwnTraps) {
  EXPECT_EQ(arm_call_and_disarm_in_child([] {
              ::signal(SIGTRAP, &programs_trap_handler);
              asm volatile("int3");  // the program's own breakpoint, before the arming
            }),
            0);
  // And after it: the program's handler is chained.
  pid_t child = ::fork();
  if (child == 0) {
    ::signal(SIGTRAP, &programs_trap_handler);
    const auto start = reinterpret_cast<uintptr_t>(&held_function);
    if (!arm_entry_trap(start, reinterpret_cast<uintptr_t>(&detour_function)).ok()) ::_exit(3);
    const int held = held_function(3);
    asm volatile("int3");
    (void)disarm_entry_trap(start);
    ::_exit(held == 300 && g_programs_traps == 1 ? 0 : 5);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

// The handler stays installed after the first arming; an int3 at an address no hook armed
// (the program's own breakpoint) gets SIGTRAP's default action, as without it.
TEST(EntryTrapDeathTest, AProgramsOwnBreakpointStillEndsItWithSigtrap) {
  const auto start = reinterpret_cast<uintptr_t>(&held_function);
  const uint8_t first_byte = *reinterpret_cast<const uint8_t*>(start);
  ASSERT_TRUE(arm_entry_trap(start, reinterpret_cast<uintptr_t>(&detour_function)).ok());
  ASSERT_TRUE(disarm_entry_trap(start).ok());
  ASSERT_EQ(*reinterpret_cast<const uint8_t*>(start), first_byte);
  EXPECT_EXIT(asm volatile("int3"), testing::KilledBySignal(SIGTRAP), "");
}

}  // namespace
}  // namespace memprof::hook
