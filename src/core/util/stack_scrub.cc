#include "core/util/stack_scrub.h"

#include <pthread.h>

#include <cstdint>

#include "core/util/proc_maps.h"

namespace memprof::util {

namespace {

constexpr size_t kGuardMargin = 16 * 1024;

struct StackBounds {
  uintptr_t floor = 0;    // the lowest usable address (0: unknown)
  uintptr_t ceiling = 0;  // one past the highest
};

// The bounds of the stack `here` is on. The calling thread's own stack if `here` is on it;
// otherwise `here` is on a stack a runtime mapped itself (a Ruby Fiber's, which
// Enumerator#next uses too): the mapping that holds it, whose start is the guard page the
// runtime put below the stack (Ruby's fiber pool always does). Only the thread's stack was
// known here once: on a fiber, nothing was cleared (a Memprof.report there kept garbage
// alive), or, were the fiber's stack above the thread's, memory below it was zeroed blindly.
StackBounds stack_bounds(uintptr_t here) noexcept {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* low = nullptr;
    size_t size = 0;
    int got = pthread_attr_getstack(&attr, &low, &size);
    pthread_attr_destroy(&attr);
    const auto floor = reinterpret_cast<uintptr_t>(low);
    if (got == 0 && here >= floor && here - floor < size) return {floor, floor + size};
  }
  try {
    auto maps = read_self_maps();
    if (!maps.ok()) return {};
    const MapEntry* mapping = find_mapping(*maps, here);
    if (mapping == nullptr || !mapping->readable || !mapping->writable) return {};
    return {mapping->start, mapping->end};
  } catch (...) {  // out of memory reading the maps: unknown
    return {};
  }
}

}  // namespace

size_t clearable_stack_below(size_t bytes) noexcept {
  auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  uintptr_t floor = stack_bounds(here).floor;
  if (floor == 0 || here < floor + kGuardMargin) return 0;
  size_t room = here - floor - kGuardMargin;
  return (bytes < room ? bytes : room) & ~size_t{7};
}

std::span<const uintptr_t> stack_words_above(const void* from) noexcept {
  const auto start = (reinterpret_cast<uintptr_t>(from) + 7) & ~uintptr_t{7};
  const uintptr_t ceiling = stack_bounds(start).ceiling & ~uintptr_t{7};
  if (ceiling <= start) return {};
  return {reinterpret_cast<const uintptr_t*>(start), (ceiling - start) / 8};
}

}  // namespace memprof::util
