// The kernel's page size: asked once (sysconf), not assumed to be 4 KB.
#pragma once

#include <unistd.h>

#include <cstddef>

namespace memprof {

inline size_t page_size() {
  static const size_t size = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace memprof
