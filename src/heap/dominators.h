// Dominator tree of the object graph from the super-root, and retained sizes.
//
// Object d dominates object v when every path from the roots to v passes through d; the
// retained size of d is the memsize of everything it dominates (itself included): what the
// heap would lose if d became unreachable. Computed with Semi-NCA (Georgiadis & Tarjan) over a
// DFS preorder, with an explicit stack and iterative path compression: no recursion on graph
// depth. About 30 bytes per node on top of the Graph.
#pragma once

#include <cstdint>
#include <vector>

#include "heap/graph.h"
#include "heap/heap.h"

namespace memprof::heap {

struct DominatorTree {
  // Immediate dominator of each node (graph ids). graph.super_root for objects referenced
  // straight from the roots with no other way in; kNoObject for the super-root itself and for
  // objects unreachable from the roots (garbage not yet swept when the dump was taken).
  BigVector<ObjectId> idom;
  // Retained size of each node in bytes; 0 for unreachable objects. retained[super_root] is the
  // memsize sum of all reachable objects.
  BigVector<uint64_t> retained;
  // Reachable nodes in DFS preorder, the super-root first: every node comes after its
  // immediate dominator, so a forward pass is top-down and a backward pass bottom-up.
  BigVector<ObjectId> preorder;

  bool reachable(ObjectId node) const { return idom[node] != kNoObject || node == super_root; }
  ObjectId super_root = 0;

  static DominatorTree compute(const Graph& graph, const Heap& heap);
};

}  // namespace memprof::heap
