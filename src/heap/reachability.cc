#include "heap/reachability.h"

#include <algorithm>

namespace memprof::heap {
namespace {

// A queue for breadth_first: every node enters it at most once, so it is reserved whole
// (reserved pages cost nothing until touched) and never copied while it grows, in 2 MB pages.
BigVector<ObjectId> node_queue(const Graph& graph) {
  BigVector<ObjectId> queue;
  queue.reserve(graph.node_count);
  return queue;
}

// Breadth-first search over object successors from `queue`'s initial contents, which must
// already be marked; `parent` (optional) receives each newly reached node's BFS parent.
void breadth_first(const Graph& graph, BigVector<ObjectId>& queue, std::vector<uint8_t>& seen,
                   std::vector<ObjectId>* parent, ObjectId stop_at) {
  for (size_t head = 0; head < queue.size(); ++head) {
    ObjectId node = queue[head];
    if (node == stop_at) return;
    graph.for_each_successor(node, [&](ObjectId next) {
      if (seen[next]) return;
      seen[next] = 1;
      if (parent != nullptr) (*parent)[next] = node;
      queue.push_back(next);
    });
  }
}

}  // namespace

std::vector<uint8_t> reachable_without_root_kind(const Graph& graph, const Heap& heap,
                                                 std::string_view excluded_kind) {
  std::vector<uint8_t> seen(graph.node_count, 0);
  BigVector<ObjectId> queue = node_queue(graph);
  for (const RootSet& root : heap.roots) {
    if (!excluded_kind.empty() && heap.str(root.kind) == excluded_kind) continue;
    for (ObjectId target : root.targets) {
      if (!seen[target]) {
        seen[target] = 1;
        queue.push_back(target);
      }
    }
  }
  breadth_first(graph, queue, seen, nullptr, kNoObject);
  return seen;
}

MachineContextOnly machine_context_only(const Graph& graph, const Heap& heap,
                                        const std::vector<uint8_t>& reachable) {
  const std::vector<uint8_t> without = reachable_without_root_kind(graph, heap, kMachineContextRoots);
  MachineContextOnly result;
  result.only.assign(heap.size(), 0);
  for (ObjectId id = 0; id < heap.size(); ++id) {
    if (reachable[id] && !without[id]) {
      result.only[id] = 1;
      ++result.count;
      result.memsize += heap.memsize[id];
    }
  }
  return result;
}

namespace {

// The path to `target` along `parent` links, and the first root set (in dump order) that
// references its first object.
RootPath path_along(const Graph& graph, const Heap& heap, const std::vector<ObjectId>& parent,
                    ObjectId target) {
  RootPath path;
  if (target == graph.super_root || parent[target] == kNoObject) return path;
  for (ObjectId node = target; node != graph.super_root; node = parent[node]) {
    path.objects.push_back(node);
  }
  std::reverse(path.objects.begin(), path.objects.end());
  ObjectId first = path.objects.front();
  for (const RootSet& root : heap.roots) {
    if (std::find(root.targets.begin(), root.targets.end(), first) != root.targets.end()) {
      path.root_kind = root.kind;
      break;
    }
  }
  return path;
}

}  // namespace

RootPath shortest_root_path(const Graph& graph, const Heap& heap, ObjectId target) {
  std::vector<uint8_t> seen(graph.node_count, 0);
  std::vector<ObjectId> parent(graph.node_count, kNoObject);
  BigVector<ObjectId> queue = node_queue(graph);
  queue.push_back(graph.super_root);
  seen[graph.super_root] = 1;
  breadth_first(graph, queue, seen, &parent, target);
  return path_along(graph, heap, parent, target);
}

RootPaths::RootPaths(const Graph& graph, const Heap& heap)
    : graph_(graph), heap_(heap), parent_(graph.node_count, kNoObject) {
  std::vector<uint8_t> seen(graph.node_count, 0);
  BigVector<ObjectId> queue = node_queue(graph);
  queue.push_back(graph.super_root);
  seen[graph.super_root] = 1;
  breadth_first(graph, queue, seen, &parent_, kNoObject);
}

RootPath RootPaths::to(ObjectId target) const { return path_along(graph_, heap_, parent_, target); }

}  // namespace memprof::heap
