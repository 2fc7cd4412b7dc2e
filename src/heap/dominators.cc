#include "heap/dominators.h"

#include <utility>

#include "heap/run_async.h"

namespace memprof::heap {
namespace {

constexpr uint32_t kUnvisited = kNoObject;

// Iterative DFS from the super-root: preorder numbers, the node of each number, and the DFS
// tree parent of each number (as a number).
struct Preorder {
  BigVector<uint32_t> number;  // node -> preorder number, kUnvisited if unreachable
  BigVector<ObjectId> node;    // preorder number -> node
  BigVector<uint32_t> parent;  // preorder number -> parent's preorder number
  uint32_t before_machine_context = 0;  // nodes numbered before the machine_context roots' turn
};

// The super-root's successors are the ROOT lines' targets, in the heap's order of its roots.
// The search takes them root line by root line, machine_context's last: a depth-first search
// numbers everything reachable from one successor before it takes the next, so the nodes
// numbered before machine_context's turn are those the other roots reach. That answers "kept
// alive only through machine_context" without a search of its own. An object's successors are
// taken in the graph's order: its class edge, then its reference edges.
Preorder depth_first(const Graph& graph, const Heap& heap) {
  Preorder order;
  order.number.assign(graph.node_count, kUnvisited);
  order.node.reserve(graph.node_count);
  order.parent.reserve(graph.node_count);
  order.number[graph.super_root] = 0;
  order.node.push_back(graph.super_root);
  order.parent.push_back(0);
  // An object being searched: its number, its class until taken, and its references not taken.
  struct Frame {
    uint32_t number;
    ObjectId class_object;
    const ObjectId* next;
    const ObjectId* end;
  };
  std::vector<Frame> stack;
  auto visit = [&](ObjectId node, uint32_t parent_number) {
    const auto number = static_cast<uint32_t>(order.node.size());
    order.number[node] = number;
    order.node.push_back(node);
    order.parent.push_back(parent_number);
    const std::span<const ObjectId> references = graph.reference_edges(node);
    stack.push_back({number, graph.class_edge(node), references.data(), references.data() + references.size()});
  };
  auto search_from = [&](ObjectId root_target) {
    if (order.number[root_target] != kUnvisited) return;
    visit(root_target, 0);
    while (!stack.empty()) {
      Frame& frame = stack.back();
      ObjectId child;
      if (frame.class_object != kNoObject) {
        child = std::exchange(frame.class_object, kNoObject);
      } else if (frame.next != frame.end) {
        child = *frame.next++;
      } else {
        stack.pop_back();
        continue;
      }
      if (order.number[child] == kUnvisited) visit(child, frame.number);  // may move `frame`
    }
  };
  for (bool machine_context : {false, true}) {
    if (machine_context) order.before_machine_context = static_cast<uint32_t>(order.node.size());
    for (const RootSet& root : heap.roots) {
      if ((heap.str(root.kind) == kMachineContextRoots) != machine_context) continue;
      for (ObjectId target : root.targets) search_from(target);
    }
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
  Preorder order = depth_first(graph, heap);
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

  // Retained sizes and subtree sizes bottom-up by preorder number: a node's idom has a smaller
  // number, so it is summed after the node. Number order keeps these passes sequential; each
  // node's results are then written to its slot once.
  BigVector<uint64_t> retained(n, 0);
  BigVector<uint32_t>& size = order.parent;  // reuse: no longer needed
  std::fill(size.begin(), size.end(), 1);
  for (uint32_t w = 1; w < n; ++w) retained[w] = heap.memsize[order.node[w]];
  for (uint32_t w = n - 1; w >= 1; --w) {
    retained[idom_number[w]] += retained[w];
    size[idom_number[w]] += size[w];
  }
  DominatorTree tree;
  tree.super_root = graph.super_root;
  // Two independent passes, one on another thread: the results by node, and the preorder.
  auto by_node = run_async([&] {
    tree.idom.assign(graph.node_count, kNoObject);
    tree.retained.assign(graph.node_count, 0);
    tree.reachable_without_machine_context.assign(graph.node_count, 0);
    tree.retained[graph.super_root] = retained[0];
    tree.reachable_without_machine_context[graph.super_root] = 1;
    for (uint32_t w = 1; w < n; ++w) {
      const ObjectId node = order.node[w];
      tree.idom[node] = order.node[idom_number[w]];
      tree.retained[node] = retained[w];
      tree.reachable_without_machine_context[node] = w < order.before_machine_context;
    }
  });
  // The dominator tree's preorder, children in number order, placed top-down: a node takes the
  // first free place in its dominator's range and leaves room for its subtree after it. `next`
  // is, for each node placed, the next free place in its own range.
  tree.preorder.resize(n);
  tree.subtree_size.resize(n);
  BigVector<uint32_t>& next = semi;  // reuse: no longer needed
  next[0] = 1;
  tree.preorder[0] = graph.super_root;
  tree.subtree_size[0] = n;
  for (uint32_t w = 1; w < n; ++w) {
    const uint32_t place = next[idom_number[w]];
    next[idom_number[w]] += size[w];
    next[w] = place + 1;
    tree.preorder[place] = order.node[w];
    tree.subtree_size[place] = size[w];
  }
  by_node.get();
  return tree;
}

}  // namespace memprof::heap
