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
  // Reachable nodes in a preorder of the dominator tree, the super-root first: a node's
  // dominator subtree is preorder[i, i + subtree_size[i]) where preorder[i] is the node, so a
  // forward pass is top-down, a backward pass bottom-up, and "is an ancestor" a range test.
  BigVector<ObjectId> preorder;
  BigVector<uint32_t> subtree_size;  // by position in `preorder`
  // 1 for each node reachable from the roots other than machine_context (the conservative scan
  // of machine stacks): a reachable node without it is kept alive only through machine_context.
  BigVector<uint8_t> reachable_without_machine_context;

  bool reachable(ObjectId node) const { return idom[node] != kNoObject || node == super_root; }
  ObjectId super_root = 0;

  static DominatorTree compute(const Graph& graph, const Heap& heap);
};

}  // namespace memprof::heap
