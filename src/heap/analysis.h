// What `memprof analyze` reports: totals, objects grouped by type, class, allocation site, gem
// and generation with their retained sizes, the biggest objects and the top retained sizes.
//
// Retained size of a group: the memsize of everything dominated by the group's objects,
// counting each object once. An object whose dominator-tree ancestor is in the same group adds
// nothing (its retained size is already inside the ancestor's), so a linked list of 1,000 Node
// objects reports the list's bytes once, not 1,000 nested times.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "heap/dominators.h"
#include "heap/duplicate_strings.h"
#include "heap/graph.h"
#include "heap/heap.h"
#include "heap/object_filter.h"

namespace memprof::heap {

struct GroupRow {
  std::string name;
  uint64_t count = 0;
  uint64_t memsize = 0;
  uint64_t retained = 0;
  std::vector<ObjectId> samples;  // the objects retaining the most (AnalysisOptions::samples)
};

struct RootRow {
  std::string kind;
  uint64_t count = 0;  // references on ROOT lines of this kind
};

struct AnalysisOptions {
  size_t top = 20;      // entries in each object list (biggest, top_retained, ...); rows are all kept
  size_t samples = 0;   // sample objects per group row
  const ObjectSelection* selection = nullptr;  // objects the report covers; nullptr: all
};

struct Analysis {
  uint64_t count = 0;       // objects the report covers (all, or those of the selection)
  uint64_t memsize = 0;
  uint64_t reachable_count = 0;
  uint64_t reachable_memsize = 0;
  uint64_t machine_context_only_count = 0;
  uint64_t machine_context_only_memsize = 0;
  std::vector<RootRow> roots;
  // Each sorted by memsize (descending), then name; all groups, not only the top ones.
  std::vector<GroupRow> by_type;
  std::vector<GroupRow> by_class;
  std::vector<GroupRow> by_location;  // "file:line", "(no allocation site)"
  std::vector<GroupRow> by_gem;       // see gem_of_file()
  std::vector<GroupRow> by_generation;  // by generation, oldest first; "(none)" first of all
  std::vector<ObjectId> biggest;       // top N alive (see Heap::reachability_known) by memsize, then address
  std::vector<ObjectId> top_retained;  // top N by retained size, none inside another's subtree
  std::vector<ObjectId> machine_context_only_objects;  // top N of them by retained size
  std::vector<std::pair<ObjectId, uint64_t>> most_referenced;  // top N by distinct referrers
  std::vector<DuplicateString> duplicate_strings;               // top N by wasted bytes
};

Analysis analyze_heap(const Heap& heap, const DominatorTree& dominators, const AnalysisOptions& options);
inline Analysis analyze_heap(const Heap& heap, const DominatorTree& dominators, size_t top) {
  return analyze_heap(heap, dominators, AnalysisOptions{.top = top});
}

// The graph, the dominator tree and the analysis of a loaded heap, as `memprof analyze` needs
// them. Grouping objects by type, class, site, gem and generation needs only the heap, so it
// runs on a second thread while this one builds the graph and the dominator tree.
struct AnalyzedHeap {
  Graph graph;
  DominatorTree dominators;
  Analysis analysis;
};
AnalyzedHeap analyze_loaded_heap(const Heap& heap, const AnalysisOptions& options);

// The gem a source file belongs to: "rack-2.2.4" for .../gems/rack-2.2.4/lib/rack.rb, "rack"
// for Debian's /usr/lib/ruby/vendor_ruby/rack/..., "ruby" for Ruby's own library
// (/usr/lib/ruby/3.1.0/set.rb), "(app)" for anything else, "(no allocation site)" for "".
std::string gem_of_file(std::string_view file);

inline constexpr std::string_view kNoSite = "(no allocation site)";
inline constexpr std::string_view kNoGenerationGroup = "(none)";  // the generation group of untraced objects

}  // namespace memprof::heap
