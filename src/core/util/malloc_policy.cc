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
// fault costs 5-15 us on the VMs we measure; the heap analyzer's chunk arrays, hash tables and
// strings took ~4,000 of them on a 30 MB dump). When the heap cannot grow (address-space limits,
// strict overcommit, a sanitizer's allocator), malloc goes on as usual.
//
// A 2 MB range gets a huge page only if nothing of it was touched before the madvise: after one
// 4 KB page the rest comes 4 KB at a time too. Growing the heap made malloc write a header after
// the probe, before the madvise could run; the blocks carved first would have shared that range
// and the unaligned start of the new space (560 faults of 4 KB on a 30 MB dump), so a spacer
// covers both, never touched nor freed, and the heap's blocks start in a clean range.
void reserve_huge_page_heap(size_t bytes) {
  mallopt(M_TOP_PAD, static_cast<int>(bytes));
  // More than the heap holds at startup, so malloc must grow it, by the pad as well.
  void* probe = malloc(kHugePage);
  asm volatile("" : : "r"(probe) : "memory");  // keeps the compiler from eliding the pair
  const auto probe_address = reinterpret_cast<uintptr_t>(probe);
  free(probe);  // back into the free space at the top of the heap, which now starts there
  const auto end = reinterpret_cast<uintptr_t>(sbrk(0));
  mallopt(M_TOP_PAD, 128 << 10);  // glibc's default, for growth beyond the reservation
  if (probe_address == 0 || end < probe_address) return;  // not from the heap
  // The first 2 MB boundary after the header malloc wrote behind the probe.
  const uintptr_t clean = (probe_address + kHugePage + 16 + kHugePage - 1) & ~(kHugePage - 1);
  if (end <= clean + kHugePage) return;  // the heap did not grow by the pad
  madvise(reinterpret_cast<void*>(clean), end - clean, MADV_HUGEPAGE);
  // Carved from where the probe was, so that the next header lands in the clean range (a huge
  // fault) and the heap's next blocks after it.
  void* spacer = malloc(clean - probe_address + 16);
  asm volatile("" : : "r"(spacer) : "memory");  // kept, never freed: its pages are never touched
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
