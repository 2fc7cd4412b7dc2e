#include "heap/duplicate_strings.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "heap/top_lists.h"

namespace memprof::heap {

namespace {

constexpr uint32_t kNoGroup = std::numeric_limits<uint32_t>::max();

// Copies of one value: equal hash, length and first bytes (so that a hash collision of two
// values that differ there does not merge them).
bool same_value(const StringValue& x, const StringValue& y) {
  return x.hash == y.hash && x.length == y.length && x.head == y.head;
}

// One distinct value: its first copy (an index into Heap::string_values) and running totals.
struct Group {
  uint64_t hash = 0;  // the value's, here so that a probe reads no other record on a mismatch
  uint64_t memsize = 0;
  uint64_t largest = 0;
  uint32_t first = 0;
  uint32_t count = 0;
};

// Marks the values that may have a copy: many heaps' Strings are mostly unique (60% in the
// synthetic benchmark dump), and a String alone in its bucket of a bitmap (4-8 buckets per
// String, by the hash's low bits) has none, so it need not enter the table below.
std::vector<bool> maybe_copied(const Heap& heap, const ObjectSelection* selection) {
  const auto& all = heap.string_values;
  const size_t buckets = std::bit_ceil(std::max<size_t>(all.size() * 4, 64));
  std::vector<bool> seen(buckets), twice(buckets), out(all.size());  // out: selected, at first
  for (size_t i = 0; i < all.size(); ++i) {
    if (selection != nullptr && !(*selection)(all[i].id)) continue;
    out[i] = true;
    const size_t bucket = all[i].hash & (buckets - 1);
    if (seen[bucket]) twice[bucket] = true;
    seen[bucket] = true;
  }
  for (size_t i = 0; i < all.size(); ++i) out[i] = out[i] && twice[all[i].hash & (buckets - 1)];
  return out;
}

// The values that may have a copy by distinct value, in one pass over them: an open-addressing
// table from the value's hash to its group. Sorting (hash, index) pairs instead took 46-57 ms on
// the benchmark dumps' 560,000-690,000 Strings, the table 10-15.
struct Grouped {
  std::vector<Group> groups;
  std::vector<uint32_t> group_of;  // per value: its group, kNoGroup when it has none
};

Grouped group_values(const Heap& heap, const ObjectSelection* selection) {
  const auto& all = heap.string_values;
  const std::vector<bool> candidate = maybe_copied(heap, selection);
  const size_t candidates = static_cast<size_t>(std::count(candidate.begin(), candidate.end(), true));
  Grouped out;
  out.group_of.assign(all.size(), kNoGroup);
  // At least twice the candidates: probe sequences stay short. Slots hold group + 1 (0: empty).
  const size_t mask = std::bit_ceil(std::max<size_t>(candidates * 2, 16)) - 1;
  std::vector<uint32_t> slots(mask + 1, 0);
  for (uint32_t i = 0; i < all.size(); ++i) {
    if (!candidate[i]) continue;
    const StringValue& value = all[i];
    size_t slot = value.hash & mask;
    uint32_t group = kNoGroup;
    for (; slots[slot] != 0; slot = (slot + 1) & mask) {
      const uint32_t other = slots[slot] - 1;
      const Group& g = out.groups[other];
      if (g.hash == value.hash && same_value(all[g.first], value)) {
        group = other;
        break;
      }
    }
    if (group == kNoGroup) {
      group = static_cast<uint32_t>(out.groups.size());
      out.groups.push_back({.hash = value.hash, .first = i});
      slots[slot] = group + 1;
    }
    Group& g = out.groups[group];
    const uint64_t memsize = heap.memsize[value.id];
    g.memsize += memsize;
    g.largest = std::max(g.largest, memsize);
    ++g.count;
    out.group_of[i] = group;
  }
  return out;
}

}  // namespace

std::vector<DuplicateString> duplicate_strings(const Heap& heap, const ObjectSelection* selection,
                                               size_t top, size_t samples) {
  const auto& all = heap.string_values;
  const Grouped grouped = group_values(heap, selection);
  std::vector<uint32_t> held_twice;
  for (uint32_t group = 0; group < grouped.groups.size(); ++group) {
    if (grouped.groups[group].count >= 2) held_twice.push_back(group);
  }
  // By wasted bytes, then count, then value, then which came first in the dump (values cut at
  // their head can tie); only the first `top` are needed in order.
  auto wasted = [&](uint32_t group) { return grouped.groups[group].memsize - grouped.groups[group].largest; };
  auto before = [&](uint32_t x, uint32_t y) {
    if (wasted(x) != wasted(y)) return wasted(x) > wasted(y);
    const Group &gx = grouped.groups[x], &gy = grouped.groups[y];
    if (gx.count != gy.count) return gx.count > gy.count;
    const std::string_view vx = all[gx.first].head_text(), vy = all[gy.first].head_text();
    return vx != vy ? vx < vy : gx.first < gy.first;
  };
  const size_t kept = top == 0 ? held_twice.size() : std::min(top, held_twice.size());
  std::partial_sort(held_twice.begin(), held_twice.begin() + static_cast<ptrdiff_t>(kept), held_twice.end(), before);
  held_twice.resize(kept);

  std::vector<DuplicateString> duplicates(kept);
  std::vector<uint32_t> rank_of(grouped.groups.size(), kNoGroup);  // group -> its row, if kept
  for (uint32_t row = 0; row < kept; ++row) {
    const Group& g = grouped.groups[held_twice[row]];
    const StringValue& first = all[g.first];
    DuplicateString& out = duplicates[row];
    out.value = std::string(first.head_text());
    out.length = first.length;
    out.cut = first.length > StringValue::kHeadSize;
    out.count = g.count;
    out.memsize = g.memsize;
    out.wasted = wasted(held_twice[row]);
    rank_of[held_twice[row]] = row;
  }
  if (samples > 0) {
    // The copies of the rows kept, in id order, then the largest of each.
    std::vector<std::vector<ObjectId>> copies(kept);
    for (uint32_t i = 0; i < all.size(); ++i) {
      const uint32_t group = grouped.group_of[i];
      if (group != kNoGroup && rank_of[group] != kNoGroup) copies[rank_of[group]].push_back(all[i].id);
    }
    for (size_t row = 0; row < kept; ++row) duplicates[row].samples = largest_first(heap, copies[row], samples);
  }
  return duplicates;
}

}  // namespace memprof::heap
