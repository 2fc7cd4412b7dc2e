#include "core/util/malloc_policy.h"

#include <malloc.h>

namespace memprof {

void reuse_freed_memory() {
  // Blocks up to 32 MB (glibc's maximum) come from the heap instead of their own mmap, whose
  // pages munmap would hand back; the top of the heap is never trimmed.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // Worker threads would each get an arena whose freed memory the main thread never reuses.
  mallopt(M_ARENA_MAX, 1);
}

}  // namespace memprof
