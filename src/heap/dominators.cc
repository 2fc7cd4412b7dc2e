#include "heap/dominators.h"

#include <utility>

namespace memprof::heap {
namespace {

constexpr uint32_t kUnvisited = kNoObject;

// Iterative DFS from the super-root: preorder numbers, the node of each number, and the DFS
// tree parent of each number (as a number).
struct Preorder {
  BigVector<uint32_t> number;  // node -> preorder number, kUnvisited if unreachable
  BigVector<ObjectId> node;    // preorder number -> node
  BigVector<uint32_t> parent;  // preorder number -> parent's preorder number
};

Preorder depth_first(const Graph& graph) {
  Preorder order;
  order.number.assign(graph.node_count, kUnvisited);
  order.node.reserve(graph.node_count);
  order.parent.reserve(graph.node_count);
  // Each frame: a node and the position of the next successor to look at.
  std::vector<std::pair<ObjectId, uint32_t>> stack;
  order.number[graph.super_root] = 0;
  order.node.push_back(graph.super_root);
  order.parent.push_back(0);
  stack.emplace_back(graph.super_root, graph.succ_begin[graph.super_root]);
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next == graph.succ_begin[node + 1]) {
      stack.pop_back();
      continue;
    }
    ObjectId child = graph.succ[next++];
    if (order.number[child] != kUnvisited) continue;
    uint32_t parent_number = order.number[node];
    order.number[child] = static_cast<uint32_t>(order.node.size());
    order.node.push_back(child);
    order.parent.push_back(parent_number);
    stack.emplace_back(child, graph.succ_begin[child]);
  }
  return order;
}

}  // namespace

// Semi-NCA, as in Georgiadis, "Linear-Time Algorithms for Dominators and Related Problems"
// (2005): semidominators with Lengauer-Tarjan's path-compressed forest (compression done with an
// explicit stack), then each immediate dominator as the nearest common ancestor of the DFS
// parent and the semidominator, found by walking up the partially built dominator tree.
// Everything is indexed by preorder number, so "v < w" means "v was visited first".
DominatorTree DominatorTree::compute(const Graph& graph, const Heap& heap) {
  Preorder order = depth_first(graph);
  const auto n = static_cast<uint32_t>(order.node.size());  // reachable nodes

  BigVector<uint32_t> semi(n);
  BigVector<uint32_t> label(n);     // min semi on the compressed path above a node
  // Forest links; kUnvisited: not linked yet (unprocessed nodes and the root, which never is).
  BigVector<uint32_t> ancestor(n, kUnvisited);
  for (uint32_t v = 0; v < n; ++v) semi[v] = label[v] = v;

  std::vector<uint32_t> path;
  for (uint32_t w = n - 1; w >= 1; --w) {
    const ObjectId node = order.node[w];
    if (graph.pred_begin[node + 1] - graph.pred_begin[node] == 1) {
      // Its DFS parent is its only way in: its semidominator (most objects of a heap).
      semi[w] = label[w] = ancestor[w] = order.parent[w];
      continue;
    }
    uint32_t best = semi[w];
    for (ObjectId pred_node : graph.predecessors(node)) {
      uint32_t v = order.number[pred_node];
      if (v == kUnvisited) continue;  // an unreachable object pointing in
      if (v > w && ancestor[ancestor[v]] != kUnvisited) {
        // eval(v), v processed hence linked: compress the path from v up to the forest root
        // (the first unlinked ancestor), leaving in label[v] the minimum semi along it.
        path.clear();
        for (uint32_t x = v; ancestor[ancestor[x]] != kUnvisited; x = ancestor[x]) path.push_back(x);
        while (!path.empty()) {
          uint32_t y = path.back();
          path.pop_back();
          uint32_t a = ancestor[y];
          if (label[a] < label[y]) label[y] = label[a];
          ancestor[y] = ancestor[a];
        }
      }
      uint32_t candidate = v <= w ? v : label[v];
      if (candidate < best) best = candidate;
      // Nothing is below the super-root: the other predecessors cannot change the result.
      // Objects the roots point to stop at their first predecessor (the super-root's edges
      // come first), which halves this pass on Rails' and synthetic heaps.
      if (best == 0) break;
    }
    semi[w] = best;
    label[w] = best;
    ancestor[w] = order.parent[w];
  }
  // Arrays are given back as soon as they are dead: the kernel hands their pages to the next
  // ones without the cost of fresh memory (see huge_page_allocator.h).
  release(label);
  release(order.number);

  // idom by preorder number; the root dominates itself.
  BigVector<uint32_t>& idom_number = ancestor;  // reuse: no longer needed
  idom_number[0] = 0;
  for (uint32_t w = 1; w < n; ++w) {
    uint32_t d = order.parent[w];
    while (d > semi[w]) d = idom_number[d];
    idom_number[w] = d;
  }
  release(semi);
  release(order.parent);

  // Retained sizes bottom-up by preorder number: a node's idom has a smaller number, so it is
  // summed after the node. Number order keeps these passes sequential; each node's results are
  // then written to its slot once.
  BigVector<uint64_t> retained(n, 0);
  for (uint32_t w = 1; w < n; ++w) retained[w] = heap.memsize[order.node[w]];
  for (uint32_t w = n - 1; w >= 1; --w) retained[idom_number[w]] += retained[w];
  DominatorTree tree;
  tree.super_root = graph.super_root;
  tree.idom.assign(graph.node_count, kNoObject);
  tree.retained.assign(graph.node_count, 0);
  tree.retained[graph.super_root] = retained[0];
  for (uint32_t w = 1; w < n; ++w) {
    ObjectId node = order.node[w];
    tree.idom[node] = order.node[idom_number[w]];
    tree.retained[node] = retained[w];
  }
  tree.preorder = std::move(order.node);
  return tree;
}

}  // namespace memprof::heap
