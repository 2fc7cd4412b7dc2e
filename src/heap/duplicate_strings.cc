#include "heap/duplicate_strings.h"

#include <algorithm>
#include <array>
#include <bit>

#include "heap/top_lists.h"

namespace memprof::heap {

namespace {

// Copies of one value: equal hash, length and first bytes (so that a hash collision of two
// values that differ there does not merge them).
bool same_value(const StringValue& x, const StringValue& y) {
  return x.hash == y.hash && x.length == y.length && x.head == y.head;
}

using HashAndIndex = std::pair<uint64_t, uint32_t>;

// The selected values as (hash, index) pairs sorted by hash: first spread over 256 parts by the
// hash's top byte (one counting pass, one scattering pass), then each part sorted on its own,
// small enough to stay in the cache, where one sort of them all was not. The same order as one
// std::sort; duplicate_strings on 560,000-690,000 Strings took 65-74 ms that way, 42-53 in parts.
std::vector<HashAndIndex> sorted_by_hash(const BigVector<StringValue>& all, const ObjectSelection* selection) {
  // Many heaps' Strings are mostly unique (60% in the synthetic benchmark dump): a String alone
  // in its bucket of a bitmap (4-8 buckets per String, by the hash's low bits) has no copy and
  // is left out before the sort: 43 -> 30 ms on 690,000 Strings of which 60% are unique; on
  // 560,000 that are 99% copies the bitmap costs 3 ms.
  const size_t buckets = std::bit_ceil(std::max<size_t>(all.size() * 4, 64));
  std::vector<uint64_t> seen(buckets / 64), twice(buckets / 64);
  auto bit = [buckets](uint64_t hash) { return hash & (buckets - 1); };
  for (const StringValue& value : all) {
    if (selection != nullptr && !(*selection)(value.id)) continue;
    const uint64_t b = bit(value.hash), mask = uint64_t{1} << (b % 64);
    (seen[b / 64] & mask ? twice[b / 64] : seen[b / 64]) |= mask;
  }
  auto selected = [&](uint32_t i) {
    const uint64_t b = bit(all[i].hash);
    return (twice[b / 64] >> (b % 64) & 1) != 0 && (selection == nullptr || (*selection)(all[i].id));
  };
  auto part_of = [](uint64_t hash) { return static_cast<size_t>(hash >> 56); };
  std::array<size_t, 257> begin{};
  for (uint32_t i = 0; i < all.size(); ++i) {
    if (selected(i)) ++begin[part_of(all[i].hash) + 1];
  }
  for (size_t part = 1; part < begin.size(); ++part) begin[part] += begin[part - 1];
  std::vector<HashAndIndex> order(begin.back());
  std::array<size_t, 256> next{};
  std::copy_n(begin.begin(), next.size(), next.begin());
  for (uint32_t i = 0; i < all.size(); ++i) {
    if (selected(i)) order[next[part_of(all[i].hash)]++] = {all[i].hash, i};
  }
  for (size_t part = 0; part + 1 < begin.size(); ++part) {
    std::sort(order.begin() + static_cast<ptrdiff_t>(begin[part]), order.begin() + static_cast<ptrdiff_t>(begin[part + 1]));
  }
  return order;
}

}  // namespace

std::vector<DuplicateString> duplicate_strings(const Heap& heap, const ObjectSelection* selection,
                                               size_t top, size_t samples) {
  // (hash, index) pairs sort fast (no pointer chasing in the comparisons) and bring each
  // value's copies together; a run of equal hashes is then split by length and first bytes.
  const auto& all = heap.string_values;
  const std::vector<HashAndIndex> order = sorted_by_hash(all, selection);
  std::vector<DuplicateString> duplicates;
  std::vector<uint32_t> run;
  for (size_t begin = 0, end; begin < order.size(); begin = end) {
    end = begin + 1;
    while (end < order.size() && order[end].first == order[begin].first) ++end;
    if (end - begin < 2) continue;
    run.clear();
    for (size_t i = begin; i < end; ++i) run.push_back(order[i].second);
    while (!run.empty()) {
      const StringValue& first = all[run.front()];
      std::vector<ObjectId> copies;
      std::erase_if(run, [&](uint32_t i) {
        if (!same_value(all[i], first)) return false;
        copies.push_back(all[i].id);
        return true;
      });
      if (copies.size() < 2) continue;
      DuplicateString& group = duplicates.emplace_back();
      group.value = std::string(first.head_text());
      group.length = first.length;
      group.cut = first.length > StringValue::kHeadSize;
      group.count = copies.size();
      uint64_t largest = 0;
      for (ObjectId id : copies) {
        group.memsize += heap.memsize[id];
        largest = std::max(largest, heap.memsize[id]);
      }
      group.wasted = group.memsize - largest;
      group.samples = largest_first(heap, copies, samples);
    }
  }
  std::sort(duplicates.begin(), duplicates.end(), [](const DuplicateString& x, const DuplicateString& y) {
    if (x.wasted != y.wasted) return x.wasted > y.wasted;
    if (x.count != y.count) return x.count > y.count;
    return x.value < y.value;
  });
  if (top != 0 && duplicates.size() > top) duplicates.resize(top);
  return duplicates;
}

}  // namespace memprof::heap
