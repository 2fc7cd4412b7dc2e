#include "core/util/malloc_policy.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace memprof {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

// Grows the heap by `bytes` now, as address space nothing has touched yet, and asks for huge
// pages on it: what malloc carves from it later faults in 2 MB at a time instead of 4 KB (a
// fault costs 5-12 us on the VMs we measure; the heap analyzer's chunk arrays, hash tables and
// strings took ~4,000 of them on a 30 MB dump). When the heap cannot grow (address-space limits,
// strict overcommit), malloc goes on as usual.
void reserve_huge_page_heap(size_t bytes) {
  mallopt(M_TOP_PAD, static_cast<int>(bytes));
  auto start = reinterpret_cast<uintptr_t>(sbrk(0));
  // More than the heap holds at startup, so malloc must grow it, by the pad as well.
  void* probe = malloc(kHugePage);
  asm volatile("" : : "r"(probe) : "memory");  // keeps the compiler from eliding the pair
  free(probe);  // may trim the heap back to the pad
  auto end = reinterpret_cast<uintptr_t>(sbrk(0));
  mallopt(M_TOP_PAD, 128 << 10);  // glibc's default, for growth beyond the reservation
  start = (start + kHugePage - 1) & ~(kHugePage - 1);
  if (end > start) madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE);
}

}  // namespace

void reuse_freed_memory() {
  // Blocks up to 32 MB (glibc's maximum) come from the heap instead of their own mmap, whose
  // pages munmap would hand back; the top of the heap is never trimmed.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // Worker threads would each get an arena whose freed memory the main thread never reuses.
  mallopt(M_ARENA_MAX, 1);
  reserve_huge_page_heap(size_t{1} << 30);
}

}  // namespace memprof
