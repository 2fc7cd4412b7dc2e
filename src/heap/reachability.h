// Reachability and shortest paths from the roots, by breadth-first search with an explicit queue
// (no recursion on graph depth).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "heap/graph.h"
#include "heap/heap.h"

namespace memprof::heap {

// Objects reachable from the ROOT lines whose kind is not `excluded_kind` (1 = reachable; an
// empty kind excludes none). With excluded_kind = "machine_context", an object reachable from
// the roots but not marked here is kept alive only by the conservative scan of machine stacks
// and registers.
std::vector<uint8_t> reachable_without_root_kind(const Graph& graph, const Heap& heap,
                                                 std::string_view excluded_kind);

// Objects reachable from any ROOT line (1 = reachable): those Ruby's next GC would keep.
inline std::vector<uint8_t> reachable_from_roots(const Graph& graph, const Heap& heap) {
  return reachable_without_root_kind(graph, heap, {});
}

// The number of reachable objects (per DominatorTree) that only machine_context keeps alive,
// with their memsize sum, and the per-object marks (1 = only through machine_context).
struct MachineContextOnly {
  uint64_t count = 0;
  uint64_t memsize = 0;
  std::vector<uint8_t> only;  // indexed by ObjectId
};
MachineContextOnly machine_context_only(const Graph& graph, const Heap& heap,
                                        const std::vector<uint8_t>& reachable);

// A shortest path from the roots to `target`: the root kind and the objects from the first one
// a root references down to `target`. Empty `objects` when `target` is unreachable.
struct RootPath {
  StringId root_kind = 0;
  std::vector<ObjectId> objects;
};
RootPath shortest_root_path(const Graph& graph, const Heap& heap, ObjectId target);
// The path's root kind, or nullopt when the path is empty (target unreachable).
inline std::optional<std::string_view> root_kind_of(const Heap& heap, const RootPath& path) {
  if (path.objects.empty()) return std::nullopt;
  return heap.str(path.root_kind);
}

// Shortest paths from the roots to every object at once: the parent of each node in one
// breadth-first search from the super-root (kNoObject: not reached), for reports that need
// many paths.
class RootPaths {
 public:
  RootPaths(const Graph& graph, const Heap& heap);
  RootPath to(ObjectId target) const;

 private:
  const Graph& graph_;
  const Heap& heap_;
  std::vector<ObjectId> parent_;
};

}  // namespace memprof::heap
