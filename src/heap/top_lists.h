// The object lists of `memprof analyze`: the biggest objects, the tops of the dominator tree
// with the largest retained sizes, the objects referenced by the most others, and the objects
// only machine_context keeps alive.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "heap/dominators.h"
#include "heap/heap.h"
#include "heap/object_filter.h"

namespace memprof::heap {

// The `top` objects with the largest key(id), ties by address, among those `selection` keeps
// (nullptr: all).
template <typename Key>
std::vector<ObjectId> top_objects(const Heap& heap, const ObjectSelection* selection, size_t top, Key key);
// The same among `candidates`.
template <typename Key>
std::vector<ObjectId> top_of(const Heap& heap, std::span<const ObjectId> candidates, size_t top, Key key);

// The first `n` of `ids` by memsize, largest first (ties by address); `ids` is reordered.
std::vector<ObjectId> largest_first(const Heap& heap, std::vector<ObjectId>& ids, size_t n);

// The objects with the largest retained sizes such that none is inside another one's dominator
// subtree: a chain of 300,000 nodes appears once, by its head, not as 20 nested nodes.
std::vector<ObjectId> top_retained_subtrees(const Heap& heap, const DominatorTree& tree,
                                            const ObjectSelection* selection, size_t top);

// The objects referenced by the most other objects in the dump's "references" (each referrer
// once, however many of its slots hold the object; class edges, which every instance has, and
// roots not counted), with that count.
std::vector<std::pair<ObjectId, uint64_t>> most_referenced(const Heap& heap, const ObjectSelection* selection,
                                                           size_t top);

namespace detail {

// The best `top` of the ids that for_each_candidate(offer) offers, by key(id) then address.
template <typename Key, typename ForEachCandidate>
std::vector<ObjectId> top_by_key(const Heap& heap, size_t top, Key key, ForEachCandidate for_each_candidate) {
  auto before = [&](ObjectId a, ObjectId b) {
    const uint64_t ka = key(a), kb = key(b);
    if (ka != kb) return ka > kb;
    return heap.address[a] < heap.address[b];
  };
  // A heap of the best `top` so far, the last of them in front: one pass, no array of every id
  // (four of these lists per analysis, each would touch 4 bytes per object of fresh memory).
  if (top == 0) return {};
  std::vector<ObjectId> best;
  best.reserve(std::min<size_t>(top, heap.size()));
  for_each_candidate([&](ObjectId id) {
    if (best.size() == top) {
      if (!before(id, best.front())) return;
      std::pop_heap(best.begin(), best.end(), before);
      best.pop_back();
    }
    best.push_back(id);
    std::push_heap(best.begin(), best.end(), before);
  });
  std::sort_heap(best.begin(), best.end(), before);
  return best;
}

}  // namespace detail

template <typename Key>
std::vector<ObjectId> top_objects(const Heap& heap, const ObjectSelection* selection, size_t top, Key key) {
  return detail::top_by_key(heap, top, key, [&](auto offer) {
    for (ObjectId id = 0; id < heap.size(); ++id) {
      if (selection == nullptr || (*selection)(id)) offer(id);
    }
  });
}

template <typename Key>
std::vector<ObjectId> top_of(const Heap& heap, std::span<const ObjectId> candidates, size_t top, Key key) {
  return detail::top_by_key(heap, top, key, [&](auto offer) {
    for (ObjectId id : candidates) offer(id);
  });
}

}  // namespace memprof::heap
