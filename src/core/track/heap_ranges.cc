#include "core/track/heap_ranges.h"

#include <algorithm>

namespace memprof::track {

void HeapRanges::add(uintptr_t start, uintptr_t end, size_t stride) {
  if (start < end && stride != 0) ranges_.push_back(Range{start, end, stride});
}

void HeapRanges::seal() {
  std::sort(ranges_.begin(), ranges_.end(),
            [](const Range& a, const Range& b) { return a.start < b.start; });
}

bool HeapRanges::contains_slot(uintptr_t address) const {
  // The last range starting at or before the address.
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), address,
                             [](uintptr_t a, const Range& r) { return a < r.start; });
  if (it == ranges_.begin()) return false;
  --it;
  return address < it->end && (address - it->start) % it->stride == 0;
}

}  // namespace memprof::track
