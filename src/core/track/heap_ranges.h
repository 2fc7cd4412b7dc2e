// The address ranges of the runtime's live heap pages, so that table entries are only read
// where memory is known to be mapped: heap pages can be freed, and an entry may name a slot on
// a page that no longer exists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memprof::track {

class HeapRanges {
 public:
  // [start, end) holds slots of `stride` bytes starting at `start`.
  void add(uintptr_t start, uintptr_t end, size_t stride);
  // Call once after the last add().
  void seal();
  // True when `address` is the start of a slot inside one of the ranges.
  bool contains_slot(uintptr_t address) const;
  size_t size() const { return ranges_.size(); }

 private:
  struct Range {
    uintptr_t start;
    uintptr_t end;
    size_t stride;
  };
  std::vector<Range> ranges_;
};

}  // namespace memprof::track
