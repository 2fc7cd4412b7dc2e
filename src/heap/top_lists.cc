#include "heap/top_lists.h"

#include <algorithm>

namespace memprof::heap {

std::vector<ObjectId> largest_first(const Heap& heap, std::vector<ObjectId>& ids, size_t n) {
  n = std::min(n, ids.size());
  if (n == 0) return {};  // partial_sort would still compare every id with the first
  std::partial_sort(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n), ids.end(), [&](ObjectId x, ObjectId y) {
    if (heap.memsize[x] != heap.memsize[y]) return heap.memsize[x] > heap.memsize[y];
    return heap.address[x] < heap.address[y];
  });
  return {ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n)};
}

std::vector<ObjectId> top_retained_subtrees(const Heap& heap, const DominatorTree& tree,
                                            const ObjectSelection* selection, size_t top) {
  // Every object lies in the subtree of one top of the dominator tree (a child of the
  // super-root), which retains at least as much: with every object selected, the list is the
  // largest tops, found in one pass.
  if (selection == nullptr || selection->all()) {
    std::vector<ObjectId> tops = top_objects(heap, nullptr, top, [&](ObjectId id) {
      return tree.idom[id] == tree.super_root ? tree.retained[id] : 0;
    });
    std::erase_if(tops, [&](ObjectId id) { return tree.idom[id] != tree.super_root; });
    return tops;
  }
  // Candidates by retained size, largest first, taken in growing batches: an object is listed
  // unless a dominator-tree ancestor already is. Ancestors retain more than their descendants
  // (by their own memsize at least), so they come first, and whether a node lies below a listed
  // one is decided once per node and remembered (kCovered/kFree) for the nodes below it.
  enum : uint8_t { kUnknown, kFree, kCovered, kListed };
  std::vector<uint8_t> state(tree.idom.size(), kUnknown);
  state[tree.super_root] = kFree;
  std::vector<ObjectId> listed;
  std::vector<ObjectId> path;
  auto below_listed = [&](ObjectId node) {
    path.clear();
    ObjectId up = tree.idom[node];
    while (state[up] == kUnknown) {
      path.push_back(up);
      up = tree.idom[up];
    }
    const uint8_t verdict = state[up] == kFree ? kFree : kCovered;
    for (ObjectId on_path : path) state[on_path] = verdict;
    return verdict == kCovered;
  };
  auto retained = [&](ObjectId id) { return tree.retained[id]; };
  for (size_t batch = std::max<size_t>(top * 4, 1024);; batch *= 4) {
    std::vector<ObjectId> candidates = top_objects(heap, selection, batch, retained);
    listed.clear();
    std::fill(state.begin(), state.end(), kUnknown);
    state[tree.super_root] = kFree;
    for (ObjectId id : candidates) {
      if (listed.size() == top || tree.retained[id] == 0) break;
      if (!tree.reachable(id)) continue;
      if (below_listed(id)) {
        state[id] = kCovered;
        continue;
      }
      state[id] = kListed;
      listed.push_back(id);
    }
    if (listed.size() == top || candidates.size() < batch) return listed;
  }
}

std::vector<std::pair<ObjectId, uint64_t>> most_referenced(const Heap& heap, const ObjectSelection* selection,
                                                           size_t top) {
  // Distinct referrers: an Array holding one String 300,000 times is one, as `retainers` says.
  std::vector<uint32_t> count(heap.size(), 0);
  std::vector<ObjectId> last_referrer(heap.size(), kNoObject);
  for (ObjectId source = 0; source < heap.size(); ++source) {
    for (ObjectId target : heap.references(source)) {
      if (last_referrer[target] == source) continue;
      last_referrer[target] = source;
      ++count[target];
    }
  }
  std::vector<ObjectId> ids = top_objects(heap, selection, top, [&](ObjectId id) { return count[id]; });
  std::vector<std::pair<ObjectId, uint64_t>> out;
  for (ObjectId id : ids) {
    if (count[id] > 0) out.emplace_back(id, count[id]);
  }
  return out;
}

}  // namespace memprof::heap
