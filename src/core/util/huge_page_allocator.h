// An allocator for arrays of millions of elements (the heap analyzer's per-object arrays):
// blocks of 2 MB and more get their own mapping, aligned to 2 MB and marked MADV_HUGEPAGE, so
// that the kernel backs them with 2 MB pages wherever transparent huge pages are not disabled
// (Debian's default is "madvise": only marked memory gets them). Why: first touching memory
// costs a page fault per 4 KB page, ~12 us each on the VM we measure, which made page faults
// the largest single cost of `analyze` (300 MB touched in 0.92-1.0 s in 4 KB pages; in 2 MB
// pages 0.54 s after a pause, 0.03-0.09 s right after another run). Smaller blocks come from
// operator new as usual.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

namespace memprof {

namespace huge_pages {
inline constexpr size_t kSize = size_t{2} << 20;
// A 2 MB-aligned mapping of at least `bytes`, marked for huge pages; nullptr when the kernel
// refuses the mapping.
void* map(size_t bytes) noexcept;
// Unmaps what map(bytes) returned. (Not kept for reuse, unlike malloc_policy.h's heap: the
// kernel hands freed pages to the next mapping without a fault to the hypervisor for a
// while, and a pool that misses spends fresh memory, which costs the most.)
void unmap(void* block, size_t bytes) noexcept;
}  // namespace huge_pages

template <typename T>
class HugePageAllocator {
 public:
  using value_type = T;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT: rebinding is implicit

  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    if (n * sizeof(T) < huge_pages::kSize) return std::allocator<T>().allocate(n);
    void* block = huge_pages::map(n * sizeof(T));
    if (block == nullptr) throw std::bad_alloc();
    return static_cast<T*>(block);
  }

  void deallocate(T* block, size_t n) noexcept {
    if (n * sizeof(T) < huge_pages::kSize) {
      std::allocator<T>().deallocate(block, n);
    } else {
      huge_pages::unmap(block, n * sizeof(T));
    }
  }

  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

// A std::vector whose storage, once it reaches 2 MB, lives in huge pages.
template <typename T>
using BigVector = std::vector<T, HugePageAllocator<T>>;

// Frees a vector's storage now (clear() keeps it).
template <typename T>
void release(BigVector<T>& vector) {
  BigVector<T>().swap(vector);
}

// An array left uninitialized, for tables that several threads fill (each thread then takes
// the first-touch page faults of its own part).
template <typename T>
struct BigArrayDeleter {
  size_t count = 0;
  void operator()(T* block) const noexcept { HugePageAllocator<T>().deallocate(block, count); }
};
template <typename T>
using BigArray = std::unique_ptr<T[], BigArrayDeleter<T>>;

template <typename T>
BigArray<T> make_big_array_for_overwrite(size_t count) {
  static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>);
  return BigArray<T>(HugePageAllocator<T>().allocate(count), BigArrayDeleter<T>{count});
}

}  // namespace memprof
