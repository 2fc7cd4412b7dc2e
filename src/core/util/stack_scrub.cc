#include "core/util/stack_scrub.h"

#include <pthread.h>

#include <cstdint>

#include "core/util/proc_maps.h"

namespace memprof::util {

namespace {

constexpr size_t kGuardMargin = 16 * 1024;

// The lowest usable address of the stack `here` is on, or 0 when unknown. The calling thread's
// own stack if `here` is on it; otherwise `here` is on a stack a runtime mapped itself (a Ruby
// Fiber's, which Enumerator#next uses too): the mapping that holds it, whose start is the guard
// page the runtime put below the stack (Ruby's fiber pool always does). Only the thread's stack
// was known here once: on a fiber, nothing was cleared (a Memprof.report there kept garbage
// alive), or, were the fiber's stack above the thread's, memory below it was zeroed blindly.
uintptr_t stack_floor(uintptr_t here) noexcept {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* low = nullptr;
    size_t size = 0;
    int got = pthread_attr_getstack(&attr, &low, &size);
    pthread_attr_destroy(&attr);
    const auto floor = reinterpret_cast<uintptr_t>(low);
    if (got == 0 && here >= floor && here - floor < size) return floor;
  }
  try {
    auto maps = read_self_maps();
    if (!maps.ok()) return 0;
    const MapEntry* mapping = find_mapping(*maps, here);
    return mapping != nullptr && mapping->readable && mapping->writable ? mapping->start : 0;
  } catch (...) {  // out of memory reading the maps: clear nothing
    return 0;
  }
}

}  // namespace

size_t clearable_stack_below(size_t bytes) noexcept {
  auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  uintptr_t floor = stack_floor(here);
  if (floor == 0 || here < floor + kGuardMargin) return 0;
  size_t room = here - floor - kGuardMargin;
  return (bytes < room ? bytes : room) & ~size_t{7};
}

}  // namespace memprof::util
