// Zeroing the unused part of the calling thread's stack, and reading the used part.
//
// A conservative garbage collector (Ruby's marks every word of the machine stack) reads the
// frames of whatever it calls, and those frames have slots the code never writes: padding,
// spill slots of paths not taken. Such slots hold whatever deeper calls left there earlier, so
// one stale pointer can keep a whole structure alive. Zeroing the region below a frame before
// the calls that lead to a collection leaves only values their frames write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace memprof::util {

// The stack pointer of the function this is inlined into.
[[gnu::always_inline]] inline uintptr_t stack_pointer() noexcept {
  uintptr_t sp;
  asm volatile("mov %%rsp, %0" : "=r"(sp));
  return sp;
}

// How many bytes below the caller's frame may be zeroed: up to `bytes`, never closer than
// 16 KB to the end of the stack it runs on, the thread's or a fiber's (0 when its bounds are
// unknown); a multiple of 8.
size_t clearable_stack_below(size_t bytes) noexcept;

// Zeroes up to `bytes` of stack below the stack pointer of the function this is inlined into.
// Inline and without a call on purpose: a zeroing function's own frame would sit right below
// the caller's, keep in its unwritten slots what the deeper calls left there, and the next
// call's frame would land on those words. (Seen: one dead String of a 9,000-String
// Memprof.report block kept alive that way.) The caller must make calls after it: only a leaf
// function keeps data below its stack pointer (the 128-byte red zone).
[[gnu::always_inline]] inline void clear_stack_below(size_t bytes = 64 * 1024) noexcept {
  size_t words = clearable_stack_below(bytes) / 8;
  if (words == 0) return;
  uintptr_t start = stack_pointer() - words * 8;
  asm volatile("rep stosq" : "+D"(start), "+c"(words) : "a"(uint64_t{0}) : "memory");
}

// The words of the stack `from` is on (the calling thread's, or the mapping a runtime made for
// a fiber) from `from` to its top: the frames of the callers of the function `from` is in.
// Empty when the stack's bounds are unknown.
std::span<const uintptr_t> stack_words_above(const void* from) noexcept;

}  // namespace memprof::util
