// Memory for the engine's tables: anonymous, zeroed, from mmap (never malloc, which the engine
// hooks), errno left as the hooked program had it.
#pragma once

#include <sys/mman.h>

#include <cerrno>
#include <cstddef>

namespace memprof::native {

// Null when the kernel refuses.
inline void* map_zeroed(size_t bytes) noexcept {
  int saved_errno = errno;
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  errno = saved_errno;
  return memory == MAP_FAILED ? nullptr : memory;
}

}  // namespace memprof::native
