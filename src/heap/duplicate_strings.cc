#include "heap/duplicate_strings.h"

#include <algorithm>

namespace memprof::heap {

std::vector<DuplicateString> duplicate_strings(const Heap& heap, const ObjectSelection* selection,
                                               size_t top, size_t samples) {
  // Equal values, equal (hash, length): sorting brings each value's copies together. Copies
  // of a value are also compared by their first bytes, so a hash collision of two values that
  // differ there does not merge them.
  std::vector<const StringValue*> values;
  values.reserve(heap.string_values.size());
  for (const StringValue& value : heap.string_values) {
    if (selection == nullptr || (*selection)(value.id)) values.push_back(&value);
  }
  auto key = [](const StringValue* v) { return std::tie(v->hash, v->length, v->head); };
  std::sort(values.begin(), values.end(), [&](const StringValue* x, const StringValue* y) {
    if (key(x) != key(y)) return key(x) < key(y);
    return x->id < y->id;
  });
  std::vector<DuplicateString> duplicates;
  for (size_t begin = 0, end; begin < values.size(); begin = end) {
    end = begin + 1;
    while (end < values.size() && key(values[end]) == key(values[begin])) ++end;
    if (end - begin < 2) continue;
    DuplicateString& group = duplicates.emplace_back();
    const StringValue& first = *values[begin];
    group.value = std::string(first.head_text());
    group.length = first.length;
    group.cut = first.length > StringValue::kHeadSize;
    group.count = end - begin;
    std::vector<ObjectId> copies;
    uint64_t largest = 0;
    for (size_t i = begin; i < end; ++i) {
      const uint64_t memsize = heap.memsize[values[i]->id];
      group.memsize += memsize;
      largest = std::max(largest, memsize);
      copies.push_back(values[i]->id);
    }
    group.wasted = group.memsize - largest;
    const size_t n = std::min(samples, copies.size());
    std::partial_sort(copies.begin(), copies.begin() + static_cast<ptrdiff_t>(n), copies.end(),
                      [&](ObjectId x, ObjectId y) {
                        if (heap.memsize[x] != heap.memsize[y]) return heap.memsize[x] > heap.memsize[y];
                        return heap.address[x] < heap.address[y];
                      });
    group.samples.assign(copies.begin(), copies.begin() + static_cast<ptrdiff_t>(n));
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
