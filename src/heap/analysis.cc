#include "heap/analysis.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "heap/object_filter.h"
#include "heap/reachability.h"
#include "heap/run_async.h"
#include "heap/top_lists.h"

namespace memprof::heap {
namespace {

// The five ways `analyze` groups objects, in the order of Analysis' lists.
enum GroupingKind : size_t { kByType, kByClass, kByLocation, kByGem, kByGeneration, kGroupingKinds };

// Every object's group in each grouping, and each group's row (name, count, memsize; retained
// comes from rollup()). The groups of one object sit together, so that rollup's walk of the
// dominator tree, which visits objects in no useful memory order, loads one record per object
// instead of one per grouping.
struct Groupings {
  BigVector<std::array<uint32_t, kGroupingKinds>> group_of;  // by ObjectId
  std::array<std::vector<GroupRow>, kGroupingKinds> rows;      // by group id
};

// Retained bytes per group, for each grouping.
using RetainedByGroup = std::array<std::vector<uint64_t>, kGroupingKinds>;

// Sums, per grouping and group, the retained size of the nodes none of whose dominators is in
// the same group, for the nodes at preorder[begin, end). In the dominator tree's preorder a
// node's subtree is the range that follows it: for each group, the end of the range of the last
// node counted tells whether the current node lies below it. Ranges cut anywhere add up to the
// whole: the nodes before `begin` that matter are its dominators, replayed first uncounted.
RetainedByGroup sum_retained_by_group(const DominatorTree& tree, const Groupings& groupings, uint32_t begin,
                                      uint32_t end) {
  RetainedByGroup retained;
  std::array<std::vector<uint32_t>, kGroupingKinds> covered_until;
  for (size_t k = 0; k < kGroupingKinds; ++k) {
    retained[k].assign(groupings.rows[k].size(), 0);
    covered_until[k].assign(groupings.rows[k].size(), 0);
  }
  auto visit = [&](uint32_t at, bool count) {
    const ObjectId node = tree.preorder[at];
    const auto& groups = groupings.group_of[node];
    for (size_t k = 0; k < kGroupingKinds; ++k) {
      uint32_t& until = covered_until[k][groups[k]];
      if (until > at) continue;  // below a node of its group
      if (count) retained[k][groups[k]] += tree.retained[node];
      until = at + tree.subtree_size[at];
    }
  };
  // Down from the super-root (position 0, in no group) to `begin`: a subtree that ends before it
  // is skipped whole, a node whose subtree holds it is one of its dominators.
  for (uint32_t at = 1; at < begin;) {
    if (at + tree.subtree_size[at] <= begin) {
      at += tree.subtree_size[at];
    } else {
      visit(at++, /*count=*/false);
    }
  }
  // The nodes come in preorder, their records (20 and 8 bytes, by id) in no useful order: the
  // records of the nodes a few places ahead are cache misses worth starting now.
  constexpr uint32_t kAhead = 8;
  for (uint32_t at = begin; at < end; ++at) {
    if (at + kAhead < end) {
      const ObjectId ahead = tree.preorder[at + kAhead];
      __builtin_prefetch(&groupings.group_of[ahead]);
      __builtin_prefetch(&tree.retained[ahead]);
    }
    visit(at, /*count=*/true);
  }
  return retained;
}

// Up to `samples` objects of each group, those retaining the most first (ties by address).
void add_samples(const Heap& heap, const DominatorTree& tree, Groupings& groupings, size_t samples,
                 const ObjectSelection* selection) {
  auto before = [&](ObjectId a, ObjectId b) {
    if (tree.retained[a] != tree.retained[b]) return tree.retained[a] > tree.retained[b];
    return heap.address[a] < heap.address[b];
  };
  for (ObjectId id = 0; id < heap.size(); ++id) {
    if (selection != nullptr && !(*selection)(id)) continue;
    for (size_t k = 0; k < kGroupingKinds; ++k) {
      std::vector<ObjectId>& kept = groupings.rows[k][groupings.group_of[id][k]].samples;
      if (kept.size() == samples && !before(id, kept.back())) continue;
      kept.insert(std::upper_bound(kept.begin(), kept.end(), id, before), id);
      if (kept.size() > samples) kept.pop_back();
    }
  }
}

// Generations as numbers, oldest first; "(none)" (allocated before tracing) before them all.
bool generation_order(const GroupRow& a, const GroupRow& b) {
  auto key = [](const GroupRow& row) -> uint64_t {
    return row.name == kNoGenerationGroup ? 0 : std::stoull(row.name) + 1;
  };
  return key(a) < key(b);
}

// Adds the retained sizes to every grouping's rows, walking the dominator tree on two threads,
// then sorts the rows.
std::array<std::vector<GroupRow>, kGroupingKinds> rollup(const DominatorTree& tree, Groupings groupings) {
  // Two halves of the preorder on two threads (position 0 is the super-root, in no group).
  const auto nodes = static_cast<uint32_t>(tree.preorder.size());
  const uint32_t half = (nodes + 1) / 2;
  auto other = run_async([&] { return sum_retained_by_group(tree, groupings, half, nodes); });
  RetainedByGroup sums = sum_retained_by_group(tree, groupings, 1, half);
  RetainedByGroup other_sums = other.get();
  auto& rows = groupings.rows;
  for (size_t k = 0; k < kGroupingKinds; ++k) {
    for (size_t g = 0; g < rows[k].size(); ++g) rows[k][g].retained = sums[k][g] + other_sums[k][g];
  }
  for (auto& list : rows) {
    std::erase_if(list, [](const GroupRow& row) { return row.count == 0; });
    std::sort(list.begin(), list.end(), [](const GroupRow& a, const GroupRow& b) {
      if (a.memsize != b.memsize) return a.memsize > b.memsize;
      return a.name < b.name;
    });
  }
  std::sort(rows[kByGeneration].begin(), rows[kByGeneration].end(), generation_order);
  return std::move(rows);
}

// Fills one grouping: assigns group ids by name, so that keys with the same label share a group.
class GroupNamer {
 public:
  GroupNamer(Groupings& groupings, GroupingKind kind) : groupings_(groupings), kind_(kind) {}

  uint32_t group(std::string name) {
    std::vector<GroupRow>& rows = groupings_.rows[kind_];
    auto [it, inserted] = ids_.try_emplace(std::move(name), static_cast<uint32_t>(rows.size()));
    if (inserted) rows.push_back({.name = it->first});
    return it->second;
  }
  void assign(ObjectId id, uint32_t group) { groupings_.group_of[id][kind_] = group; }

 private:
  Groupings& groupings_;
  GroupingKind kind_;
  std::unordered_map<std::string, uint32_t> ids_;
};

void group_by_type(const Heap& heap, Groupings& groupings) {
  // Type values are the group ids.
  for (int t = 0; t < kObjectTypeCount; ++t) {
    groupings.rows[kByType].push_back({.name = std::string(object_type_name(static_cast<ObjectType>(t)))});
  }
  for (ObjectId id = 0; id < heap.size(); ++id) {
    groupings.group_of[id][kByType] = static_cast<uint32_t>(heap.type[id]);
  }
}

void group_by_class(const Heap& heap, Groupings& groupings) {
  GroupNamer namer(groupings, kByClass);
  // The label depends only on the class object, or on the IMEMO type, or on the object type,
  // and for a DATA object on its struct as well (`Object (ObjectTracing/...)` is not `Object`):
  // compute it once per distinct one, cached in flat arrays (no hashing per object) except for
  // DATA objects with a struct, which are few.
  constexpr uint32_t kUnset = std::numeric_limits<uint32_t>::max();
  BigVector<uint32_t> by_class(heap.size(), kUnset);
  std::vector<uint32_t> by_detail(heap.strings.size(), kUnset);
  std::vector<uint32_t> by_type(kObjectTypeCount, kUnset);
  std::unordered_map<ClassKey, uint32_t, ClassKeyHash> by_data_struct;
  for (ObjectId id = 0; id < heap.size(); ++id) {
    uint32_t* slot;
    if (heap.type[id] == ObjectType::kImemo) {
      slot = &by_detail[heap.detail[id]];
    } else if (heap.type[id] == ObjectType::kData && heap.detail[id] != 0) {
      slot = &by_data_struct.try_emplace(class_key(heap, id), kUnset).first->second;
    } else if (heap.class_of[id] != kNoObject) {
      slot = &by_class[heap.class_of[id]];
    } else {
      slot = &by_type[static_cast<size_t>(heap.type[id])];
    }
    if (*slot == kUnset) *slot = namer.group(heap.class_label(id));
    namer.assign(id, *slot);
  }
}

void group_by_location(const Heap& heap, Groupings& groupings) {
  // Sites are distinct file:line pairs already: their ids are the group ids.
  std::vector<GroupRow>& rows = groupings.rows[kByLocation];
  rows.reserve(heap.sites.size());
  rows.push_back({.name = std::string(kNoSite)});
  for (size_t s = 1; s < heap.sites.size(); ++s) {
    rows.push_back({.name = fmt::format("{}:{}", heap.str(heap.sites[s].file), heap.sites[s].line)});
  }
  for (ObjectId id = 0; id < heap.size(); ++id) groupings.group_of[id][kByLocation] = heap.site[id];
}

void group_by_gem(const Heap& heap, Groupings& groupings) {
  GroupNamer namer(groupings, kByGem);
  std::vector<uint32_t> gem_of_site(heap.sites.size());
  for (size_t s = 0; s < heap.sites.size(); ++s) {
    gem_of_site[s] = namer.group(gem_of_file(heap.str(heap.sites[s].file)));
  }
  for (ObjectId id = 0; id < heap.size(); ++id) namer.assign(id, gem_of_site[heap.site[id]]);
}

void group_by_generation(const Heap& heap, Groupings& groupings) {
  GroupNamer namer(groupings, kByGeneration);
  // Generations are GC counts: small numbers, cached in a flat array; the rare huge ones (and
  // "no generation") go through the namer's hash map.
  constexpr uint32_t kUnset = std::numeric_limits<uint32_t>::max();
  constexpr uint32_t kDense = 1u << 20;
  std::vector<uint32_t> dense;
  for (ObjectId id = 0; id < heap.size(); ++id) {
    uint32_t generation = heap.generation[id];
    if (generation < kDense) {
      if (generation >= dense.size()) dense.resize(generation + 1, kUnset);
      if (dense[generation] == kUnset) dense[generation] = namer.group(std::to_string(generation));
      namer.assign(id, dense[generation]);
    } else {
      namer.assign(id, namer.group(generation == kNoGeneration ? std::string(kNoGenerationGroup) : std::to_string(generation)));
    }
  }
}

// All groupings with their counts and memsizes: everything but the retained sizes, which need
// the dominator tree. Objects the selection leaves out go to one hidden group per grouping
// (no count: dropped with the empty rows), so that they add nothing to any row.
Groupings group_objects(const Heap& heap, const ObjectSelection* selection) {
  Groupings groupings;
  groupings.group_of.resize(heap.size());
  group_by_type(heap, groupings);
  group_by_class(heap, groupings);
  group_by_location(heap, groupings);
  group_by_gem(heap, groupings);
  group_by_generation(heap, groupings);
  if (selection != nullptr && !selection->all()) {
    std::array<uint32_t, kGroupingKinds> hidden;
    for (size_t k = 0; k < kGroupingKinds; ++k) {
      hidden[k] = static_cast<uint32_t>(groupings.rows[k].size());
      groupings.rows[k].emplace_back();
    }
    for (ObjectId id = 0; id < heap.size(); ++id) {
      if (!(*selection)(id)) groupings.group_of[id] = hidden;
    }
  }
  for (ObjectId id = 0; id < heap.size(); ++id) {
    if (selection != nullptr && !(*selection)(id)) continue;
    for (size_t k = 0; k < kGroupingKinds; ++k) {
      GroupRow& row = groupings.rows[k][groupings.group_of[id][k]];
      ++row.count;
      row.memsize += heap.memsize[id];
    }
  }
  return groupings;
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
  // An installed gem's directory is NAME-VERSION (a git checkout's NAME-REVISION); an app's own
  // "gems" directory ("/app/gems/lib/a.rb") names no gem.
  if (std::string gem = component_after("/gems/"); gem.find('-', 1) != std::string::npos) return gem;
  if (std::string gem = component_after("/vendor_ruby/"); !gem.empty()) return gem;
  // Ruby's own library: /usr/lib/ruby/3.1.0/..., ~/.rubies/ruby-3.3.0/lib/ruby/3.3.0/...
  if (size_t at = file.find("/lib/ruby/"); at != std::string_view::npos) {
    std::string_view rest = file.substr(at + 10);
    if (!rest.empty() && rest[0] >= '0' && rest[0] <= '9') return "ruby";
  }
  return "(app)";
}

namespace {

// The lists that need only the heap, not the dominator tree: `analyze` makes them on the second
// core while the first computes the tree.
struct HeapOnlyLists {
  std::vector<std::pair<ObjectId, uint64_t>> most_referenced;
  std::vector<DuplicateString> duplicate_strings;
};

HeapOnlyLists heap_only_lists(const Heap& heap, const AnalysisOptions& options) {
  const ObjectSelection* selection = options.selection;
  return {most_referenced(heap, selection, options.top),
          duplicate_strings(heap, selection, options.top, options.samples)};
}

// Counts, memsizes and the machine_context-only objects, in one pass over the objects.
void add_totals(const Heap& heap, const DominatorTree& dominators, const AnalysisOptions& options,
                Analysis& analysis) {
  const ObjectSelection* selection = options.selection;
  const BigVector<uint8_t>& without_machine_context = dominators.reachable_without_machine_context;
  std::vector<ObjectId> only_machine_context;  // most often a few: stale words on a stack
  for (ObjectId id = 0; id < heap.size(); ++id) {
    if (selection != nullptr && !(*selection)(id)) continue;
    const bool reachable = dominators.reachable(id);
    const uint64_t memsize = heap.memsize[id];
    ++analysis.count;
    analysis.memsize += memsize;
    if (reachable) {
      ++analysis.reachable_count;
      analysis.reachable_memsize += memsize;
    }
    if (reachable && !without_machine_context[id]) {
      ++analysis.machine_context_only_count;
      analysis.machine_context_only_memsize += memsize;
      only_machine_context.push_back(id);
    }
  }
  analysis.machine_context_only_objects = top_of(heap, only_machine_context, options.top,
                                                 [&](ObjectId id) { return dominators.retained[id]; });
}

// The biggest objects that are alive. Garbage the GC had not swept yet is left out: no path
// leads to it and the next GC frees it, and a loop that drops large buffers would otherwise fill
// the list with them. When the ROOT lines do not tell what is alive, every object counts.
std::vector<ObjectId> biggest_live_objects(const Heap& heap, const DominatorTree& dominators,
                                           const AnalysisOptions& options) {
  if (!heap.reachability_known())
    return top_objects(heap, options.selection, options.top, [&](ObjectId id) { return heap.memsize[id]; });
  // memsize + 1: a live object of memsize 0 still ranks above every unreachable one.
  auto biggest = top_objects(heap, options.selection, options.top, [&](ObjectId id) {
    return dominators.reachable(id) ? heap.memsize[id] + 1 : 0;
  });
  std::erase_if(biggest, [&](ObjectId id) { return !dominators.reachable(id); });
  return biggest;
}

Analysis analyze_grouped_heap(const Heap& heap, const DominatorTree& dominators,
                              const AnalysisOptions& options, Groupings groupings, HeapOnlyLists lists) {
  Analysis analysis;
  analysis.most_referenced = std::move(lists.most_referenced);
  analysis.duplicate_strings = std::move(lists.duplicate_strings);
  // What needs the dominator tree but not the rollup: on another thread while this one and a
  // helper walk the tree for the rollup (they write different fields of `analysis`).
  auto rest = run_async([&] {
    analysis.top_retained = top_retained_subtrees(heap, dominators, options.selection, options.top);
    analysis.biggest = biggest_live_objects(heap, dominators, options);
    add_totals(heap, dominators, options, analysis);
  });
  if (options.samples > 0) add_samples(heap, dominators, groupings, options.samples, options.selection);
  auto rows = rollup(dominators, std::move(groupings));
  analysis.by_type = std::move(rows[kByType]);
  analysis.by_class = std::move(rows[kByClass]);
  analysis.by_location = std::move(rows[kByLocation]);
  analysis.by_gem = std::move(rows[kByGem]);
  analysis.by_generation = std::move(rows[kByGeneration]);

  std::vector<std::pair<StringId, uint64_t>> roots;
  for (const RootSet& root : heap.roots) {
    auto found = std::find_if(roots.begin(), roots.end(), [&](auto& r) { return r.first == root.kind; });
    if (found == roots.end()) found = roots.insert(roots.end(), {root.kind, 0});
    found->second += root.targets.size();
  }
  for (auto& [kind, count] : roots) analysis.roots.push_back({std::string(heap.str(kind)), count});
  rest.get();
  return analysis;
}

}  // namespace

Analysis analyze_heap(const Heap& heap, const DominatorTree& dominators, const AnalysisOptions& options) {
  return analyze_grouped_heap(heap, dominators, options, group_objects(heap, options.selection),
                              heap_only_lists(heap, options));
}

AnalyzedHeap analyze_loaded_heap(const Heap& heap, const AnalysisOptions& options) {
  // The groupings and the heap-only lists need only the heap: they run on the second core while
  // this thread builds the graph and computes the dominator tree, one after the other, so that
  // this thread, whose work is the longest chain, keeps a core of its own.
  auto beside_tree = run_async([&] {
    Groupings groupings = group_objects(heap, options.selection);
    HeapOnlyLists lists = heap_only_lists(heap, options);
    return std::pair{std::move(groupings), std::move(lists)};
  });
  Graph graph = Graph::build(heap);
  DominatorTree dominators = DominatorTree::compute(graph, heap);
  auto [groupings, lists] = beside_tree.get();
  Analysis analysis = analyze_grouped_heap(heap, dominators, options, std::move(groupings), std::move(lists));
  return {std::move(graph), std::move(dominators), std::move(analysis)};
}

}  // namespace memprof::heap
