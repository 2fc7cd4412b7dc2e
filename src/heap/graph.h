// The object graph of a Heap in compressed sparse row form, forward and reverse, with a virtual
// super-root above the ROOT lines. Built once (O(objects + references)); every traversal over it
// is iterative, so reference chains of any length work with the default 8 MB stack.
//
// Nodes 0..heap.size()-1 are the heap's objects (same ids); node heap.size() is the super-root,
// whose successors are the targets of all ROOT lines. An object's successors are its
// "references" plus its class (the dump leaves the class out of "references", but the GC marks
// it: a singleton class, for one, is kept alive only by its object). Duplicate edges are kept;
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

  BigVector<uint32_t> succ_begin;  // node_count + 1 entries
  BigVector<ObjectId> succ;
  BigVector<uint32_t> pred_begin;  // node_count + 1 entries
  BigVector<ObjectId> pred;

  std::span<const ObjectId> successors(ObjectId node) const {
    return {succ.data() + succ_begin[node], succ.data() + succ_begin[node + 1]};
  }
  // The super-root first when it is one (the dominator tree stops looking at a node's
  // predecessors there), then objects in id order.
  std::span<const ObjectId> predecessors(ObjectId node) const {
    return {pred.data() + pred_begin[node], pred.data() + pred_begin[node + 1]};
  }

  static Graph build(const Heap& heap);
};

}  // namespace memprof::heap
