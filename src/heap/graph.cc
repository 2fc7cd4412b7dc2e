#include "heap/graph.h"

namespace memprof::heap {

Graph Graph::build(const Heap& heap) {
  Graph graph;
  const auto objects = static_cast<uint32_t>(heap.size());
  graph.node_count = objects + 1;
  graph.super_root = objects;
  graph.class_of = {heap.class_of.data(), heap.class_of.size()};
  graph.ref_begin = {heap.ref_begin.data(), heap.ref_begin.size()};
  graph.ref_targets = {heap.ref_targets.data(), heap.ref_targets.size()};
  graph.roots = heap.roots;

  // Reverse edges by counting sort: in-degrees, prefix sums, then placement, the super-root's
  // edges first. Each object's successors are its class, then the range of its references:
  // read here through plain pointers, for two passes of random writes over 4 bytes per node
  // and per edge.
  const ObjectId* class_of = heap.class_of.data();
  const uint32_t* ref_begin = heap.ref_begin.data();
  const ObjectId* ref_targets = heap.ref_targets.data();
  graph.pred_begin.assign(size_t{graph.node_count} + 1, 0);
  uint32_t* in_degree = graph.pred_begin.data() + 1;
  for (const RootSet& root : heap.roots) {
    for (ObjectId target : root.targets) ++in_degree[target];
  }
  for (ObjectId id = 0; id < objects; ++id) {
    if (class_of[id] != kNoObject) ++in_degree[class_of[id]];
    for (uint32_t at = ref_begin[id]; at < ref_begin[id + 1]; ++at) ++in_degree[ref_targets[at]];
  }
  for (uint32_t node = 0; node < graph.node_count; ++node) {
    graph.pred_begin[node + 1] += graph.pred_begin[node];
  }
  graph.pred.resize(graph.pred_begin[graph.node_count]);
  std::vector<uint32_t> cursor(graph.pred_begin.begin(), graph.pred_begin.end() - 1);
  uint32_t* next = cursor.data();
  ObjectId* pred = graph.pred.data();
  for (const RootSet& root : heap.roots) {
    for (ObjectId target : root.targets) pred[next[target]++] = graph.super_root;
  }
  for (ObjectId id = 0; id < objects; ++id) {
    if (class_of[id] != kNoObject) pred[next[class_of[id]]++] = id;
    for (uint32_t at = ref_begin[id]; at < ref_begin[id + 1]; ++at) pred[next[ref_targets[at]]++] = id;
  }
  return graph;
}

}  // namespace memprof::heap
