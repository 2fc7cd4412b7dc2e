#include "heap/graph.h"

namespace memprof::heap {

Graph Graph::build(const Heap& heap) {
  Graph graph;
  const auto objects = static_cast<uint32_t>(heap.size());
  graph.node_count = objects + 1;
  graph.super_root = objects;

  size_t root_edges = 0;
  for (const RootSet& root : heap.roots) root_edges += root.targets.size();
  size_t class_edges = 0;
  for (ObjectId id = 0; id < objects; ++id) class_edges += heap.class_of[id] != kNoObject;

  graph.succ_begin.resize(size_t{graph.node_count} + 1);
  graph.succ.resize(heap.ref_targets.size() + class_edges + root_edges);
  uint32_t out = 0;
  for (ObjectId id = 0; id < objects; ++id) {
    graph.succ_begin[id] = out;
    if (heap.class_of[id] != kNoObject) graph.succ[out++] = heap.class_of[id];
    for (ObjectId target : heap.references(id)) graph.succ[out++] = target;
  }
  graph.succ_begin[objects] = out;
  for (const RootSet& root : heap.roots) {
    for (ObjectId target : root.targets) graph.succ[out++] = target;
  }
  graph.succ_begin[graph.node_count] = out;

  // Reverse edges by counting sort: in-degrees, prefix sums, then placement.
  graph.pred_begin.assign(size_t{graph.node_count} + 1, 0);
  for (ObjectId target : graph.succ) ++graph.pred_begin[target + 1];
  for (uint32_t node = 0; node < graph.node_count; ++node) {
    graph.pred_begin[node + 1] += graph.pred_begin[node];
  }
  graph.pred.resize(graph.succ.size());
  std::vector<uint32_t> cursor(graph.pred_begin.begin(), graph.pred_begin.end() - 1);
  auto place = [&](uint32_t node) {
    for (ObjectId target : graph.successors(node)) graph.pred[cursor[target]++] = node;
  };
  place(graph.super_root);
  for (ObjectId id = 0; id < objects; ++id) place(id);
  return graph;
}

}  // namespace memprof::heap
