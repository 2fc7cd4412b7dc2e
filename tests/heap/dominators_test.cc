// Dominators and retained sizes: textbook graphs, a brute-force cross-check on random graphs,
// and a 500,000-object chain that any recursive traversal would overflow the stack on.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "heap/analysis.h"
#include "heap/dominators.h"
#include "heap/graph.h"
#include "heap/reachability.h"
#include "test_support.h"

namespace memprof::heap {
namespace {

using testing::load_text;
using testing::object_line;
using testing::root_line;

uint64_t addr(int node) { return 0x10000 + 40 * static_cast<uint64_t>(node); }

// A dump of `nodes` objects (memsize 1 << i for node i) with the given edges and roots.
std::string graph_dump(int nodes, const std::vector<std::pair<int, int>>& edges,
                       const std::vector<int>& roots, const std::string& root_kind = "vm") {
  std::vector<std::vector<uint64_t>> refs(static_cast<size_t>(nodes));
  for (auto [from, to] : edges) refs[static_cast<size_t>(from)].push_back(addr(to));
  std::vector<uint64_t> root_refs;
  for (int r : roots) root_refs.push_back(addr(r));
  std::string text = root_line(root_kind, root_refs);
  for (int i = 0; i < nodes; ++i) {
    text += object_line(addr(i), "OBJECT", 0, refs[static_cast<size_t>(i)], uint64_t{1} << (i % 40));
  }
  return text;
}

struct Analyzed {
  Heap heap;
  Graph graph;
  DominatorTree tree;
};

Analyzed analyze(const std::string& text) {
  Analyzed a{load_text(text), {}, {}};
  a.graph = Graph::build(a.heap);
  a.tree = DominatorTree::compute(a.graph, a.heap);
  return a;
}

TEST(Dominators, LengauerTarjanPaperExample) {
  enum { R, A, B, C, D, E, F, G, H, I, J, K, L, N };
  auto a = analyze(graph_dump(N,
                              {{R, A}, {R, B}, {R, C}, {A, D}, {B, A}, {B, D}, {B, E}, {C, F}, {C, G},
                               {D, L}, {E, H}, {F, I}, {G, I}, {G, J}, {H, E}, {H, K}, {I, K},
                               {J, I}, {K, I}, {K, R}, {L, H}},
                              {R}));
  std::vector<ObjectId> expected = {a.graph.super_root, R, R, R, R, R, C, C, R, R, G, R, D};
  for (int v = 0; v < N; ++v) EXPECT_EQ(a.tree.idom[static_cast<size_t>(v)], expected[static_cast<size_t>(v)]) << v;
  auto size = [](std::initializer_list<int> nodes) {
    uint64_t sum = 0;
    for (int n : nodes) sum += uint64_t{1} << n;
    return sum;
  };
  EXPECT_EQ(a.tree.retained[C], size({C, F, G, J}));
  EXPECT_EQ(a.tree.retained[D], size({D, L}));
  EXPECT_EQ(a.tree.retained[G], size({G, J}));
  EXPECT_EQ(a.tree.retained[I], size({I}));
  EXPECT_EQ(a.tree.retained[R], (uint64_t{1} << N) - 1);
  EXPECT_EQ(a.tree.retained[a.graph.super_root], (uint64_t{1} << N) - 1);
  EXPECT_EQ(a.tree.preorder.size(), static_cast<size_t>(N) + 1);
  EXPECT_EQ(a.tree.preorder[0], a.graph.super_root);
}

TEST(Dominators, UnreachableObjectsAndSharedRoots) {
  // 0 and 1 are roots; 2 is reached from both; 3 only from 2; 4 and 5 are garbage (5 -> 2).
  auto a = analyze(graph_dump(6, {{0, 2}, {1, 2}, {2, 3}, {5, 2}}, {0, 1}));
  EXPECT_EQ(a.tree.idom[2], a.graph.super_root);
  EXPECT_EQ(a.tree.idom[3], 2u);
  EXPECT_EQ(a.tree.idom[4], kNoObject);
  EXPECT_FALSE(a.tree.reachable(4));
  EXPECT_FALSE(a.tree.reachable(5));
  EXPECT_EQ(a.tree.retained[4], 0u);
  EXPECT_EQ(a.tree.retained[2], 4u + 8u);
  EXPECT_EQ(a.tree.retained[a.graph.super_root], 1u + 2u + 4u + 8u);
}

TEST(Graph, PredecessorsListTheSuperRootFirst) {
  // The dominator tree stops scanning an object's predecessors at the super-root: with the
  // roots' edges last, objects the roots point to (most of a heap's classes and constants)
  // would be scanned in full.
  auto a = analyze(graph_dump(4, {{0, 3}, {1, 3}, {2, 3}}, {3, 1}));
  EXPECT_EQ(std::vector<ObjectId>(a.graph.predecessors(3).begin(), a.graph.predecessors(3).end()),
            (std::vector<ObjectId>{a.graph.super_root, 0, 1, 2}));
  EXPECT_EQ(std::vector<ObjectId>(a.graph.predecessors(1).begin(), a.graph.predecessors(1).end()),
            (std::vector<ObjectId>{a.graph.super_root}));
  EXPECT_EQ(a.tree.idom[3], a.graph.super_root);
  EXPECT_EQ(a.tree.idom[0], kNoObject);
}

TEST(Dominators, ClassEdgesKeepSingletonClassesAlive) {
  // The object's class is not in "references" but the GC marks it: the singleton class is
  // dominated by its only instance.
  std::string text = root_line("vm", {0x100}) +
                     object_line(0x100, "OBJECT", 0x200, {}, 40) +
                     object_line(0x200, "CLASS", 0, {}, 500, R"(, "singleton":true)");
  auto a = analyze(text);
  EXPECT_EQ(a.tree.idom[1], 0u);
  EXPECT_EQ(a.tree.retained[0], 540u);
}

// Brute force: d dominates v iff v is unreachable from the super-root once d is removed.
BigVector<ObjectId> naive_idoms(const Graph& graph) {
  auto reach = [&](ObjectId removed) {
    std::vector<uint8_t> seen(graph.node_count, 0);
    std::vector<ObjectId> stack{graph.super_root};
    seen[graph.super_root] = 1;
    while (!stack.empty()) {
      ObjectId n = stack.back();
      stack.pop_back();
      graph.for_each_successor(n, [&](ObjectId s) {
        if (s != removed && !seen[s]) {
          seen[s] = 1;
          stack.push_back(s);
        }
      });
    }
    return seen;
  };
  std::vector<uint8_t> all = reach(kNoObject);
  std::vector<std::vector<uint8_t>> dominated_by(graph.node_count);
  for (ObjectId d = 0; d < graph.node_count; ++d) dominated_by[d] = reach(d);
  BigVector<ObjectId> idom(graph.node_count, kNoObject);
  for (ObjectId v = 0; v < graph.node_count; ++v) {
    if (!all[v] || v == graph.super_root) continue;
    // Strict dominators of v: d != v with v unreachable without d. The immediate one is the
    // strict dominator dominated by all the others: the one with the most strict dominators.
    std::vector<ObjectId> doms;
    for (ObjectId d = 0; d < graph.node_count; ++d) {
      if (d != v && (d == graph.super_root || !dominated_by[d][v])) doms.push_back(d);
    }
    size_t best_count = 0;
    for (ObjectId d : doms) {
      size_t count = 0;
      for (ObjectId e : doms) count += e != d && (e == graph.super_root || !dominated_by[e][d]);
      if (idom[v] == kNoObject || count > best_count) {
        idom[v] = d;
        best_count = count;
      }
    }
  }
  return idom;
}

// Whether `d` is `v` or one of its dominators, by walking up from `v`.
bool dominates(const DominatorTree& tree, ObjectId d, ObjectId v) {
  for (ObjectId up = v; up != kNoObject; up = tree.idom[up]) {
    if (up == d) return true;
  }
  return false;
}

TEST(Dominators, MatchesBruteForceOnRandomGraphs) {
  std::mt19937 random(42);
  for (int trial = 0; trial < 60; ++trial) {
    int nodes = 5 + trial % 40;
    std::vector<std::pair<int, int>> edges;
    int edge_count = nodes * (1 + trial % 3);
    for (int e = 0; e < edge_count; ++e) {
      edges.emplace_back(static_cast<int>(random() % nodes), static_cast<int>(random() % nodes));
    }
    // A machine_context ROOT line between two others, as Ruby writes it.
    std::string text = graph_dump(nodes, edges, {0, static_cast<int>(random() % nodes)}) +
                       root_line("machine_context", {addr(static_cast<int>(random() % nodes))}) +
                       root_line("global_list", {addr(static_cast<int>(random() % nodes))});
    auto a = analyze(text);
    EXPECT_EQ(a.tree.idom, naive_idoms(a.graph)) << "trial " << trial;
    // Retained size = memsize of the dominator subtree, checked by walking idom chains.
    BigVector<uint64_t> expected(a.graph.node_count, 0);
    for (ObjectId v = 0; v < a.heap.size(); ++v) {
      if (!a.tree.reachable(v)) continue;
      for (ObjectId d = v; d != kNoObject; d = a.tree.idom[d]) expected[d] += a.heap.memsize[v];
    }
    EXPECT_EQ(a.tree.retained, expected) << "trial " << trial;

    // The preorder: every reachable node once, and the range after each node is exactly what
    // it dominates.
    size_t reachable = 0;
    for (ObjectId v = 0; v < a.graph.node_count; ++v) reachable += a.tree.reachable(v);
    ASSERT_EQ(a.tree.preorder.size(), reachable) << "trial " << trial;
    ASSERT_EQ(a.tree.subtree_size.size(), reachable) << "trial " << trial;
    for (size_t at = 0; at < a.tree.preorder.size(); ++at) {
      const ObjectId d = a.tree.preorder[at];
      std::vector<ObjectId> range(a.tree.preorder.begin() + static_cast<ptrdiff_t>(at),
                                  a.tree.preorder.begin() + static_cast<ptrdiff_t>(at + a.tree.subtree_size[at]));
      std::vector<ObjectId> dominated;
      for (ObjectId v = 0; v < a.graph.node_count; ++v) {
        if (a.tree.reachable(v) && dominates(a.tree, d, v)) dominated.push_back(v);
      }
      std::sort(range.begin(), range.end());
      EXPECT_EQ(range, dominated) << "trial " << trial << ", node " << d;
    }

    // What the roots but machine_context reach, as a search from them alone finds it.
    const std::vector<uint8_t> searched = reachable_without_root_kind(a.graph, a.heap, "machine_context");
    for (ObjectId v = 0; v < a.heap.size(); ++v) {
      EXPECT_EQ(a.tree.reachable_without_machine_context[v], searched[v]) << "trial " << trial << ", node " << v;
    }
  }
}

TEST(Dominators, TheGraphOutlivesAMoveOfItsHeap) {
  // The graph reads the successors from the heap's arrays: moving the Heap (as returning it
  // does) must leave them where the graph sees them.
  Heap heap = load_text(graph_dump(4, {{0, 1}, {1, 2}, {0, 3}, {3, 2}}, {0}));
  const Graph graph = Graph::build(heap);
  const Heap moved = std::move(heap);
  const DominatorTree tree = DominatorTree::compute(graph, moved);
  EXPECT_EQ(tree.idom[2], 0u);
  EXPECT_EQ(tree.idom[3], 0u);
  EXPECT_EQ(reachable_from_roots(graph, moved), (std::vector<uint8_t>{1, 1, 1, 1, 0}));  // not the super-root
}

TEST(Dominators, HalfMillionLongChainOnTheDefaultStack) {
  // root -> 0 -> 1 -> ... -> 499999, as a linked list in a real heap. Every traversal must be
  // iterative: recursion 500,000 deep overflows the default 8 MB stack.
  constexpr int kLength = 500000;
  std::string text = root_line("vm", {addr(0)});
  text.reserve(size_t{kLength} * 110);
  for (int i = 0; i < kLength; ++i) {
    std::vector<uint64_t> next;
    if (i + 1 < kLength) next.push_back(addr(i + 1));
    text += object_line(addr(i), "OBJECT", 0, next, 40);
  }
  auto a = analyze(text);
  ASSERT_EQ(a.heap.size(), static_cast<size_t>(kLength));
  EXPECT_EQ(a.tree.retained[0], uint64_t{40} * kLength);
  EXPECT_EQ(a.tree.retained[kLength - 1], 40u);
  EXPECT_EQ(a.tree.idom[kLength - 1], static_cast<ObjectId>(kLength - 2));

  RootPath path = shortest_root_path(a.graph, a.heap, kLength - 1);
  EXPECT_EQ(path.objects.size(), static_cast<size_t>(kLength));
  EXPECT_EQ(a.heap.str(path.root_kind), "vm");

  Analysis analysis = analyze_heap(a.heap, a.tree, 3);
  ASSERT_EQ(analysis.by_class.size(), 1u);
  EXPECT_EQ(analysis.by_class[0].name, "(OBJECT)");
  EXPECT_EQ(analysis.by_class[0].count, static_cast<uint64_t>(kLength));
  EXPECT_EQ(analysis.by_class[0].retained, uint64_t{40} * kLength);  // counted once, not nested
}

}  // namespace
}  // namespace memprof::heap
