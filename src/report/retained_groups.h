// Retained size of the whole reachable heap split by class, for the HTML report's treemap.
//
// The objects whose immediate dominator is the super-root are the tops of the dominator tree:
// their retained sizes are disjoint and add up to exactly the reachable memsize. Grouping those
// tops by class label gives a partition of the reachable heap ("what holds the memory"), unlike
// summing retained sizes over all objects of a class, which counts nested objects many times.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "heap/dominators.h"
#include "heap/heap.h"

namespace memprof::report {

struct RetainedGroup {
  std::string name;      // class label (Heap::class_label), or "(N more classes)"
  uint64_t retained = 0;  // bytes
  uint64_t objects = 0;   // dominator-tree tops in the group
};

// At most `max_groups` groups, largest first (ties by name); when there are more, the smallest
// are merged into one last "(N more classes)" group so the total stays exact. Groups retaining
// 0 bytes are left out.
std::vector<RetainedGroup> retained_by_top_level_class(const heap::Heap& heap,
                                                       const heap::DominatorTree& tree,
                                                       size_t max_groups);

}  // namespace memprof::report
