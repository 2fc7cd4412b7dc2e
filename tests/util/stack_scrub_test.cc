#include "core/util/stack_scrub.h"

#include <alloca.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <cstdint>
#include <span>

namespace memprof::util {
namespace {

// What a deep call leaves behind on the stack: a word a conservative GC would take for a
// pointer.
constexpr uintptr_t kStaleWord = 0x5afe5afe5afe5afeULL;

// Fills `bytes` of stack below its caller with kStaleWord, then returns.
__attribute__((noinline)) void leave_stale_words(size_t bytes) {
  auto* words = static_cast<volatile uintptr_t*>(alloca(bytes));
  for (size_t i = 0; i < bytes / 8; ++i) words[i] = kStaleWord;
}

// The stale words between its own stack pointer and `top`: in its own frame, which has slots
// it never writes (as a GC's frames do), and up to its caller's stack pointer.
__attribute__((noinline)) size_t stale_words_up_to(uintptr_t top) {
  uintptr_t never_written[32];
  asm volatile("" : : "r"(never_written) : "memory");  // keeps the slots in the frame
  size_t count = 0;
  for (uintptr_t word = stack_pointer(); word < top; word += 8)
    count += *reinterpret_cast<volatile uintptr_t*>(word) == kStaleWord;
  return count;
}

// Without clearing, the next call's frame holds the deeper call's words: what the test below
// must not see.
TEST(StackScrub, ANewFrameKeepsTheWordsADeeperCallLeft) {
  leave_stale_words(16 * 1024);
  EXPECT_GT(stale_words_up_to(stack_pointer()), 0u);
}

// Cleared from the caller's own frame, with no call in between: every word below its stack
// pointer, where the next call's frame goes, is zero. (A zeroing function called here left its
// own frame there -- return address, saved registers, slots it never wrote -- and the next
// frame's unwritten slots inherited them.)
TEST(StackScrub, LeavesOnlyZeroesBelowTheStackPointer) {
  leave_stale_words(16 * 1024);
  clear_stack_below();
  uintptr_t top = stack_pointer();
  size_t nonzero = 0;
  for (uintptr_t word = top - 16 * 1024; word < top; word += 8)
    nonzero += *reinterpret_cast<volatile uintptr_t*>(word) != 0;
  EXPECT_EQ(nonzero, 0u);
  EXPECT_EQ(stale_words_up_to(stack_pointer()), 0u);
}

// Never closer than 16 KB to the end of the stack: on a thread of a 64 KB stack, less than
// 48 KB of the 1 MB asked for.
TEST(StackScrub, StaysClearOfTheEndOfASmallStack) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, 64 * 1024), 0);
  size_t clearable = 0;
  pthread_t thread;
  auto body = +[](void* out) -> void* {
    *static_cast<size_t*>(out) = clearable_stack_below(1024 * 1024);
    clear_stack_below(1024 * 1024);  // would fault past the stack's end if it ignored the bound
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, body, &clearable), 0);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
  pthread_attr_destroy(&attr);
  EXPECT_GT(clearable, 0u);
  EXPECT_LT(clearable, 48u * 1024);
  EXPECT_EQ(clearable % 8, 0u);
}

// On a stack a runtime mapped itself, as Ruby does for a Fiber (here through ucontext, with a
// guard page below it as Ruby's fiber pool has): cleared down to 16 KB above that guard, not
// beyond (a fault on the guard), and not nothing (a report in a Fiber kept its garbage).
TEST(StackScrub, ClearsAFibersStackWithinItsMapping) {
  constexpr size_t kPage = 4096, kStack = 96 * 1024;
  void* mapped = mmap(nullptr, kPage + kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  ASSERT_EQ(mprotect(mapped, kPage, PROT_NONE), 0);
  static ucontext_t caller, fiber;
  static size_t clearable;
  static uintptr_t here;
  ASSERT_EQ(getcontext(&fiber), 0);
  fiber.uc_stack.ss_sp = static_cast<char*>(mapped) + kPage;
  fiber.uc_stack.ss_size = kStack;
  fiber.uc_link = &caller;
  makecontext(&fiber, +[] {
    here = stack_pointer();
    clearable = clearable_stack_below(1024 * 1024);
    clear_stack_below(1024 * 1024);  // would fault on the guard page if it ignored the bound
  }, 0);
  ASSERT_EQ(swapcontext(&caller, &fiber), 0);
  const auto floor = reinterpret_cast<uintptr_t>(mapped) + kPage;
  EXPECT_GT(clearable, 0u);
  EXPECT_GE(here - clearable, floor + 16 * 1024 - 64);  // (from the frame, a few words above sp)
  EXPECT_LT(here - clearable, floor + 16 * 1024 + 256);
  munmap(mapped, kPage + kStack);
}

// The words of a frame's callers, and none of its own: a dump's child reads the app's part of
// the stack with it (ruby/heap_at_fork.h).
__attribute__((noinline)) bool callee_sees(const void* boundary, const volatile uintptr_t* in_caller) {
  volatile uintptr_t in_callee = kStaleWord + 1;
  std::span<const uintptr_t> words = stack_words_above(boundary);
  auto holds = [&](const volatile uintptr_t* slot) {
    return slot >= words.data() && slot < words.data() + words.size();
  };
  return holds(in_caller) && words[in_caller - words.data()] == *in_caller && !holds(&in_callee);
}

TEST(StackWords, AboveAStackPointerAreTheCallersWordsUpToTheTopOfTheStack) {
  volatile uintptr_t in_caller = kStaleWord + 2;
  EXPECT_TRUE(callee_sees(reinterpret_cast<const void*>(stack_pointer()), &in_caller));
  EXPECT_TRUE(stack_words_above(reinterpret_cast<const void*>(uintptr_t{4096})).empty());  // no stack there
}

}  // namespace
}  // namespace memprof::util
