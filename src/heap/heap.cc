#include "heap/heap.h"

#include <bit>

#include <fmt/format.h>

namespace memprof::heap {

namespace {
inline uint64_t slot_of(uint64_t address, unsigned shift) {
  // Addresses are 8-byte aligned; Fibonacci hashing takes the best-mixed top bits.
  return ((address >> 3) * 0x9E3779B97F4A7C15ull) >> shift;
}
}  // namespace

void Heap::prefetch(uint64_t target) const {
  if (!index.keys.empty()) __builtin_prefetch(&index.keys[slot_of(target, index.shift)]);
}

ObjectId Heap::find(uint64_t target) const {
  if (index.keys.empty() || target == 0) return kNoObject;
  for (uint64_t slot = slot_of(target, index.shift);; slot = (slot + 1) & index.mask) {
    uint64_t key = index.keys[slot];
    if (key == target) return index.values[slot];
    if (key == 0) return kNoObject;
  }
}

uint64_t Heap::build_index() {
  size_t wanted = size() + size() / 2 + 1;
  size_t capacity = std::bit_ceil(std::max<size_t>(wanted, 16));
  index.keys.assign(capacity, 0);
  index.values.assign(capacity, kNoObject);
  index.mask = capacity - 1;
  index.shift = static_cast<unsigned>(64 - std::countr_zero(capacity));
  uint64_t duplicates = 0;
  constexpr ObjectId kAhead = 16;  // random writes into a table far larger than the caches
  for (ObjectId id = 0; id < size(); ++id) {
    if (id + kAhead < size()) prefetch(address[id + kAhead]);
    uint64_t target = address[id];
    for (uint64_t slot = slot_of(target, index.shift);; slot = (slot + 1) & index.mask) {
      uint64_t key = index.keys[slot];
      if (key == 0) {
        index.keys[slot] = target;
        index.values[slot] = id;
        break;
      }
      if (key == target) {  // the first line with this address keeps it
        ++duplicates;
        break;
      }
    }
  }
  return duplicates;
}

std::string_view Heap::class_name(ObjectId id) const {
  ObjectId klass = class_of[id];
  if (klass == kNoObject) return {};
  auto found = class_names.find(klass);
  return found == class_names.end() ? std::string_view{} : str(found->second);
}

std::string Heap::class_label(ObjectId id) const {
  if (type[id] == ObjectType::kImemo) return fmt::format("(IMEMO:{})", str(detail[id]));
  std::string_view name = class_name(id);
  if (!name.empty()) return std::string(name);
  if (class_of[id] != kNoObject) return fmt::format("#<Class:{:#x}>", address[class_of[id]]);
  return fmt::format("({})", object_type_name(type[id]));
}

std::string Heap::site_label(ObjectId id) const {
  const Site& s = sites[site[id]];
  if (s.file == 0) return {};
  return fmt::format("{}:{}", str(s.file), s.line);
}

}  // namespace memprof::heap
