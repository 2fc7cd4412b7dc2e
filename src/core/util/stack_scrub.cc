#include "core/util/stack_scrub.h"

#include <pthread.h>

#include <cstdint>

namespace memprof::util {

namespace {

constexpr size_t kGuardMargin = 16 * 1024;

// The lowest usable address of the calling thread's stack, or 0 when unknown.
uintptr_t stack_floor() noexcept {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return 0;
  void* low = nullptr;
  size_t size = 0;
  int got = pthread_attr_getstack(&attr, &low, &size);
  pthread_attr_destroy(&attr);
  return got == 0 ? reinterpret_cast<uintptr_t>(low) : 0;
}

}  // namespace

size_t clearable_stack_below(size_t bytes) noexcept {
  auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  uintptr_t floor = stack_floor();
  if (floor == 0 || here < floor + kGuardMargin) return 0;
  size_t room = here - floor - kGuardMargin;
  return (bytes < room ? bytes : room) & ~size_t{7};
}

}  // namespace memprof::util
