// The object graph of a Heap, with a virtual super-root above the ROOT lines: the successors
// read from the heap itself, the predecessors in compressed sparse row form, built once
// (O(objects + references)). Every traversal over it is iterative, so reference chains of any
// length work with the default 8 MB stack.
//
// Nodes 0..heap.size()-1 are the heap's objects (same ids); node heap.size() is the super-root,
// whose successors are the targets of all ROOT lines. An object's successors are its class
// (the dump leaves the class out of "references", but the GC marks it: a singleton class, for
// one, is kept alive only by its object), then its "references". Duplicate edges are kept;
// algorithms do not care.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "heap/heap.h"

namespace memprof::heap {

struct Graph {
  uint32_t node_count = 0;  // heap.size() + 1
  ObjectId super_root = 0;  // == heap.size()
  // The successors, read from the heap's own arrays (a copy of them in graph form cost a fifth
  // of the graph's and the dominator tree's time and 4 bytes per edge, for no faster
  // traversal): views of its buffers, which stay where they are when the Heap is moved; the
  // Heap must outlive the graph.
  std::span<const ObjectId> class_of;
  std::span<const uint32_t> ref_begin;
  std::span<const ObjectId> ref_targets;
  std::span<const RootSet> roots;

  BigVector<uint32_t> pred_begin;  // node_count + 1 entries
  BigVector<ObjectId> pred;

  // An object's successors, in order: its class (kNoObject: none), then its references.
  ObjectId class_edge(ObjectId object) const { return class_of[object]; }
  std::span<const ObjectId> reference_edges(ObjectId object) const {
    return ref_targets.subspan(ref_begin[object], ref_begin[object + 1] - ref_begin[object]);
  }
  // Calls visit(successor) for each successor of `node`, in order.
  template <typename Visit>
  void for_each_successor(ObjectId node, Visit visit) const {
    if (node == super_root) {
      for (const RootSet& root : roots) {
        for (ObjectId target : root.targets) visit(target);
      }
      return;
    }
    if (class_edge(node) != kNoObject) visit(class_edge(node));
    for (ObjectId target : reference_edges(node)) visit(target);
  }
  // The super-root first when it is one (the dominator tree stops looking at a node's
  // predecessors there), then objects in id order.
  std::span<const ObjectId> predecessors(ObjectId node) const {
    return {pred.data() + pred_begin[node], pred.data() + pred_begin[node + 1]};
  }

  static Graph build(const Heap& heap);
};

}  // namespace memprof::heap
