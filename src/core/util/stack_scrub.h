// Zeroing the unused part of the calling thread's stack.
//
// A conservative garbage collector (Ruby's marks every word of the machine stack) reads the
// frames of whatever it calls, and those frames have slots the code never writes: padding,
// spill slots of paths not taken. Such slots hold whatever deeper calls left there earlier, so
// one stale pointer can keep a whole structure alive. Zeroing the region below the caller's
// frame before starting a collection leaves only values the collector's own frames write.
#pragma once

#include <cstddef>

namespace memprof::util {

// Zeroes up to `bytes` of stack below the caller's frame, never closer than 16 KB to the end
// of the thread's stack. Returns the number of bytes zeroed.
size_t clear_stack_below(size_t bytes = 64 * 1024) noexcept;

// Calls fn() with every frame it makes on zeroed stack: zeroes below, then steps over the
// frame clear_stack_below used, so that only this small frame sits between the caller's and
// fn's. Call it first thing, from a function whose own frame held no object pointers yet.
template <typename Fn>
__attribute__((noinline)) decltype(auto) run_on_clean_stack(Fn&& fn) {
  clear_stack_below();
  volatile char* gap = static_cast<char*>(__builtin_alloca(1024));
  gap[0] = 0;  // keeps the gap from being optimized away
  return fn();
}

}  // namespace memprof::util
