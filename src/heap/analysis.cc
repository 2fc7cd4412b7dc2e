#include "heap/analysis.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "heap/reachability.h"
#include "heap/run_async.h"

namespace memprof::heap {
namespace {

// Objects assigned to dense groups, with a name per group.
struct Grouping {
  std::vector<uint32_t> group_of;  // by ObjectId
  std::vector<std::string> names;
};

// The dominator tree's children in CSR form, for the top-down walk of rollup().
struct DominatorChildren {
  std::vector<uint32_t> begin;
  std::vector<ObjectId> children;

  DominatorChildren(const Graph& graph, const DominatorTree& tree) {
    begin.assign(size_t{graph.node_count} + 1, 0);
    for (ObjectId node : tree.preorder) {
      if (node != graph.super_root) ++begin[tree.idom[node] + 1];
    }
    for (uint32_t i = 0; i < graph.node_count; ++i) begin[i + 1] += begin[i];
    children.resize(begin[graph.node_count]);
    std::vector<uint32_t> cursor(begin.begin(), begin.end() - 1);
    for (ObjectId node : tree.preorder) {
      if (node != graph.super_root) children[cursor[tree.idom[node]]++] = node;
    }
  }
};

// Counts, memsizes and retained sizes of every grouping, with one walk of the dominator tree for
// all of them: per grouping and group, how many of the current node's ancestors are in the
// group; a node adds its retained size to its group only when none is.
std::vector<std::vector<GroupRow>> rollup(const Heap& heap, const Graph& graph,
                                          const DominatorTree& tree, const DominatorChildren& dom,
                                          const std::vector<Grouping>& groupings) {
  const size_t kinds = groupings.size();
  std::vector<std::vector<GroupRow>> rows(kinds);
  std::vector<std::vector<uint32_t>> active(kinds);
  for (size_t k = 0; k < kinds; ++k) {
    const Grouping& grouping = groupings[k];
    rows[k].resize(grouping.names.size());
    active[k].assign(grouping.names.size(), 0);
    for (size_t g = 0; g < rows[k].size(); ++g) rows[k][g].name = grouping.names[g];
    for (ObjectId id = 0; id < heap.size(); ++id) {
      GroupRow& row = rows[k][grouping.group_of[id]];
      ++row.count;
      row.memsize += heap.memsize[id];
    }
  }
  std::vector<std::pair<ObjectId, uint32_t>> stack{{graph.super_root, dom.begin[graph.super_root]}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next == dom.begin[node + 1]) {
      if (node != graph.super_root) {
        for (size_t k = 0; k < kinds; ++k) --active[k][groupings[k].group_of[node]];
      }
      stack.pop_back();
      continue;
    }
    ObjectId child = dom.children[next++];
    for (size_t k = 0; k < kinds; ++k) {
      uint32_t group = groupings[k].group_of[child];
      if (active[k][group]++ == 0) rows[k][group].retained += tree.retained[child];
    }
    stack.emplace_back(child, dom.begin[child]);
  }
  for (auto& list : rows) {
    std::erase_if(list, [](const GroupRow& row) { return row.count == 0; });
    std::sort(list.begin(), list.end(), [](const GroupRow& a, const GroupRow& b) {
      if (a.memsize != b.memsize) return a.memsize > b.memsize;
      return a.name < b.name;
    });
  }
  return rows;
}

// Assigns group ids by name, so that keys with the same label share a group.
class GroupNamer {
 public:
  explicit GroupNamer(Grouping& grouping) : grouping_(grouping) {}
  uint32_t group(std::string name) {
    auto [it, inserted] = ids_.try_emplace(std::move(name), static_cast<uint32_t>(grouping_.names.size()));
    if (inserted) grouping_.names.push_back(it->first);
    return it->second;
  }

 private:
  Grouping& grouping_;
  std::unordered_map<std::string, uint32_t> ids_;
};

Grouping group_by_type(const Heap& heap) {
  Grouping grouping;
  for (int t = 0; t < kObjectTypeCount; ++t) {
    grouping.names.emplace_back(object_type_name(static_cast<ObjectType>(t)));
  }
  grouping.group_of.resize(heap.size());
  for (ObjectId id = 0; id < heap.size(); ++id) grouping.group_of[id] = static_cast<uint32_t>(heap.type[id]);
  return grouping;
}

Grouping group_by_class(const Heap& heap) {
  Grouping grouping;
  GroupNamer namer(grouping);
  // The label depends only on the class object, or on the IMEMO type, or on the object type:
  // compute it once per distinct one, cached in flat arrays (no hashing per object).
  constexpr uint32_t kUnset = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> by_class(heap.size(), kUnset);
  std::vector<uint32_t> by_detail(heap.strings.size(), kUnset);
  std::vector<uint32_t> by_type(kObjectTypeCount, kUnset);
  grouping.group_of.resize(heap.size());
  for (ObjectId id = 0; id < heap.size(); ++id) {
    uint32_t* slot;
    if (heap.type[id] == ObjectType::kImemo) {
      slot = &by_detail[heap.detail[id]];
    } else if (heap.class_of[id] != kNoObject) {
      slot = &by_class[heap.class_of[id]];
    } else {
      slot = &by_type[static_cast<size_t>(heap.type[id])];
    }
    if (*slot == kUnset) *slot = namer.group(heap.class_label(id));
    grouping.group_of[id] = *slot;
  }
  return grouping;
}

Grouping group_by_location(const Heap& heap) {
  Grouping grouping;
  grouping.names.reserve(heap.sites.size());
  grouping.names.emplace_back(kNoSite);
  for (size_t s = 1; s < heap.sites.size(); ++s) {
    grouping.names.push_back(fmt::format("{}:{}", heap.str(heap.sites[s].file), heap.sites[s].line));
  }
  grouping.group_of.assign(heap.site.begin(), heap.site.end());
  return grouping;
}

Grouping group_by_gem(const Heap& heap) {
  Grouping grouping;
  GroupNamer namer(grouping);
  std::vector<uint32_t> gem_of_site(heap.sites.size());
  for (size_t s = 0; s < heap.sites.size(); ++s) {
    gem_of_site[s] = namer.group(gem_of_file(heap.str(heap.sites[s].file)));
  }
  grouping.group_of.resize(heap.size());
  for (ObjectId id = 0; id < heap.size(); ++id) grouping.group_of[id] = gem_of_site[heap.site[id]];
  return grouping;
}

Grouping group_by_generation(const Heap& heap) {
  Grouping grouping;
  GroupNamer namer(grouping);
  // Generations are GC counts: small numbers, cached in a flat array; the rare huge ones (and
  // "no generation") go through the namer's hash map.
  constexpr uint32_t kUnset = std::numeric_limits<uint32_t>::max();
  constexpr uint32_t kDense = 1u << 20;
  std::vector<uint32_t> dense;
  grouping.group_of.resize(heap.size());
  for (ObjectId id = 0; id < heap.size(); ++id) {
    uint32_t generation = heap.generation[id];
    if (generation < kDense) {
      if (generation >= dense.size()) dense.resize(generation + 1, kUnset);
      if (dense[generation] == kUnset) dense[generation] = namer.group(std::to_string(generation));
      grouping.group_of[id] = dense[generation];
    } else {
      grouping.group_of[id] = namer.group(generation == kNoGeneration ? "(none)" : std::to_string(generation));
    }
  }
  return grouping;
}

std::vector<Grouping> group_objects(const Heap& heap) {
  std::vector<Grouping> groupings;
  groupings.push_back(group_by_type(heap));
  groupings.push_back(group_by_class(heap));
  groupings.push_back(group_by_location(heap));
  groupings.push_back(group_by_gem(heap));
  groupings.push_back(group_by_generation(heap));
  return groupings;
}

template <typename Key>
std::vector<ObjectId> top_objects(const Heap& heap, size_t top, Key key) {
  std::vector<ObjectId> ids(heap.size());
  for (ObjectId id = 0; id < heap.size(); ++id) ids[id] = id;
  auto before = [&](ObjectId a, ObjectId b) {
    uint64_t ka = key(a), kb = key(b);
    if (ka != kb) return ka > kb;
    return heap.address[a] < heap.address[b];
  };
  size_t n = std::min(top, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n), ids.end(), before);
  ids.resize(n);
  return ids;
}

}  // namespace

std::string gem_of_file(std::string_view file) {
  if (file.empty()) return std::string(kNoSite);
  auto component_after = [&](std::string_view marker) -> std::string {
    size_t at = file.rfind(marker);
    if (at == std::string_view::npos) return {};
    std::string_view rest = file.substr(at + marker.size());
    size_t slash = rest.find('/');
    // "vendor_ruby/rack.rb" (a file directly in the directory) names the gem "rack" too.
    std::string_view component = rest.substr(0, slash);
    if (slash == std::string_view::npos && component.ends_with(".rb")) component.remove_suffix(3);
    return std::string(component);
  };
  if (std::string gem = component_after("/gems/"); !gem.empty()) return gem;
  if (std::string gem = component_after("/vendor_ruby/"); !gem.empty()) return gem;
  // Ruby's own library: /usr/lib/ruby/3.1.0/..., ~/.rubies/ruby-3.3.0/lib/ruby/3.3.0/...
  if (size_t at = file.find("/lib/ruby/"); at != std::string_view::npos) {
    std::string_view rest = file.substr(at + 10);
    if (!rest.empty() && rest[0] >= '0' && rest[0] <= '9') return "ruby";
  }
  return "(app)";
}

namespace {

Analysis analyze_grouped_heap(const Heap& heap, const Graph& graph,
                              const DominatorTree& dominators, size_t top,
                              const std::vector<Grouping>& groupings) {
  Analysis analysis;
  analysis.count = heap.size();
  std::vector<uint8_t> reachable(heap.size(), 0);
  for (ObjectId id = 0; id < heap.size(); ++id) {
    analysis.memsize += heap.memsize[id];
    if (dominators.reachable(id)) {
      reachable[id] = 1;
      ++analysis.reachable_count;
      analysis.reachable_memsize += heap.memsize[id];
    }
  }
  // The second reachability pass (without machine_context) needs only the graph: it runs on
  // another thread while this one groups objects and walks the dominator tree.
  auto mc_future = run_async([&] { return machine_context_only(graph, heap, reachable); });

  std::vector<std::pair<StringId, uint64_t>> roots;
  for (const RootSet& root : heap.roots) {
    auto found = std::find_if(roots.begin(), roots.end(), [&](auto& r) { return r.first == root.kind; });
    if (found == roots.end()) found = roots.insert(roots.end(), {root.kind, 0});
    found->second += root.targets.size();
  }
  for (auto& [kind, count] : roots) analysis.roots.push_back({std::string(heap.str(kind)), count});

  DominatorChildren children(graph, dominators);
  auto rows = rollup(heap, graph, dominators, children, groupings);
  analysis.by_type = std::move(rows[0]);
  analysis.by_class = std::move(rows[1]);
  analysis.by_location = std::move(rows[2]);
  analysis.by_gem = std::move(rows[3]);
  analysis.by_generation = std::move(rows[4]);
  analysis.biggest = top_objects(heap, top, [&](ObjectId id) { return heap.memsize[id]; });
  analysis.top_retained = top_objects(heap, top, [&](ObjectId id) { return dominators.retained[id]; });
  MachineContextOnly mc = mc_future.get();
  analysis.machine_context_only_count = mc.count;
  analysis.machine_context_only_memsize = mc.memsize;
  return analysis;
}

}  // namespace

Analysis analyze_heap(const Heap& heap, const Graph& graph, const DominatorTree& dominators,
                      size_t top) {
  return analyze_grouped_heap(heap, graph, dominators, top, group_objects(heap));
}

AnalyzedHeap analyze_loaded_heap(const Heap& heap, size_t top) {
  auto groupings = run_async([&] { return group_objects(heap); });
  Graph graph = Graph::build(heap);
  DominatorTree dominators = DominatorTree::compute(graph, heap);
  Analysis analysis = analyze_grouped_heap(heap, graph, dominators, top, groupings.get());
  return {std::move(graph), std::move(dominators), std::move(analysis)};
}

}  // namespace memprof::heap
