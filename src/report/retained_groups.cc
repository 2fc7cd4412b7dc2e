#include "report/retained_groups.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

namespace memprof::report {

std::vector<RetainedGroup> retained_by_top_level_class(const heap::Heap& heap,
                                                       const heap::DominatorTree& tree,
                                                       size_t max_groups) {
  std::unordered_map<std::string, RetainedGroup> by_name;
  for (heap::ObjectId id = 0; id < heap.size(); ++id) {
    if (tree.idom[id] != tree.super_root || tree.retained[id] == 0) continue;
    std::string name = heap.class_label(id);
    RetainedGroup& group = by_name[name];
    if (group.name.empty()) group.name = std::move(name);
    group.retained += tree.retained[id];
    ++group.objects;
  }
  std::vector<RetainedGroup> groups;
  groups.reserve(by_name.size());
  for (auto& [name, group] : by_name) groups.push_back(std::move(group));
  std::sort(groups.begin(), groups.end(), [](const RetainedGroup& a, const RetainedGroup& b) {
    return a.retained != b.retained ? a.retained > b.retained : a.name < b.name;
  });
  if (max_groups > 0 && groups.size() > max_groups) {
    RetainedGroup rest;
    const size_t kept = max_groups - 1;
    for (size_t i = kept; i < groups.size(); ++i) {
      rest.retained += groups[i].retained;
      rest.objects += groups[i].objects;
    }
    rest.name = fmt::format("({} more classes)", groups.size() - kept);
    groups.resize(kept);
    groups.push_back(std::move(rest));
  }
  return groups;
}

}  // namespace memprof::report
