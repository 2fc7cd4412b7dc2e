#include "core/util/huge_page_allocator.h"

#include <sys/mman.h>

#include <cstdint>

namespace memprof::huge_pages {
namespace {

size_t rounded_up(size_t bytes) { return (bytes + kSize - 1) & ~(kSize - 1); }

}  // namespace

void* map(size_t bytes) noexcept {
  const size_t length = rounded_up(bytes);
  // mmap aligns to 4 KB only: map 2 MB more and cut the unaligned head and tail off.
  void* raw = ::mmap(nullptr, length + kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kSize - 1) & ~(uintptr_t{kSize} - 1);
  if (aligned > start) ::munmap(raw, aligned - start);
  if (const uintptr_t tail = start + length + kSize - (aligned + length); tail > 0) {
    ::munmap(reinterpret_cast<void*>(aligned + length), tail);
  }
  // A hint: without transparent huge pages the block is still usable, in 4 KB pages.
  ::madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void unmap(void* block, size_t bytes) noexcept { ::munmap(block, rounded_up(bytes)); }

}  // namespace memprof::huge_pages
