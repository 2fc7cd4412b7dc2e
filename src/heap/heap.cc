#include "heap/heap.h"

#include <algorithm>
#include <bit>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "heap/run_async.h"

namespace memprof::heap {

namespace {

// The index is cut in this many independent tables by the top bits of the hash, so that
// build_index() fills them on as many threads (two cores on the machines we target).
constexpr uint64_t kIndexParts = 2;

inline uint64_t slot_of(uint64_t address, unsigned shift) {
  // Addresses are 8-byte aligned; Fibonacci hashing takes the best-mixed top bits.
  return ((address >> 3) * 0x9E3779B97F4A7C15ull) >> shift;
}

}  // namespace

void Heap::prefetch(uint64_t target) const {
  if (index.keys) __builtin_prefetch(&index.keys[slot_of(target, index.shift)]);
}

ObjectId Heap::find(uint64_t target) const {
  if (!index.keys || target == 0) return kNoObject;
  const uint64_t home = slot_of(target, index.shift);
  const uint64_t part = home & ~index.part_mask;  // linear probing wraps within the part
  for (uint64_t slot = home;; slot = part | ((slot + 1) & index.part_mask)) {
    uint64_t key = index.keys[slot];
    if (key == target) return index.values[slot];
    if (key == 0) return kNoObject;
  }
}

uint64_t Heap::build_index() {
  const size_t wanted = size() + size() / 2 + 1;
  const size_t capacity = std::bit_ceil(std::max<size_t>(wanted, 16));
  const uint64_t part_size = capacity / kIndexParts;
  // Each part is cleared by the thread that fills it (the first touch of tens of MB is page
  // faults worth sharing); values[] is read only where keys[] matched and needs no clearing.
  index.keys = make_big_array_for_overwrite<uint64_t>(capacity);
  index.values = make_big_array_for_overwrite<ObjectId>(capacity);
  index.part_mask = part_size - 1;
  index.shift = static_cast<unsigned>(64 - std::countr_zero(capacity));

  // Fills one part with the addresses whose home slot is in it, in id order: the first line with
  // an address keeps it. Returns the number of duplicates found.
  auto fill_part = [this, part_size](uint64_t part) -> uint64_t {
    const uint64_t first = part * part_size;
    uint64_t* keys = index.keys.get();
    std::fill_n(keys + first, part_size, 0);
    uint64_t duplicates = 0;
    constexpr ObjectId kAhead = 16;  // random writes into a table far larger than the caches
    auto in_part = [&](uint64_t slot) { return (slot & ~index.part_mask) == first; };
    for (ObjectId id = 0; id < size(); ++id) {
      if (id + kAhead < size()) {
        const uint64_t ahead = slot_of(address[id + kAhead], index.shift);
        if (in_part(ahead)) __builtin_prefetch(&keys[ahead]);  // the other parts are not ours
      }
      const uint64_t target = address[id];
      const uint64_t home = slot_of(target, index.shift);
      if (!in_part(home)) continue;
      for (uint64_t slot = home;; slot = first | ((slot + 1) & index.part_mask)) {
        if (keys[slot] == 0) {
          keys[slot] = target;
          index.values[slot] = id;
          break;
        }
        if (keys[slot] == target) {
          ++duplicates;
          break;
        }
      }
    }
    return duplicates;
  };
  std::vector<Task<uint64_t>> others;
  for (uint64_t part = 1; part < kIndexParts; ++part) {
    others.push_back(run_async([=] { return fill_part(part); }));
  }
  uint64_t duplicates = fill_part(0);
  for (auto& other : others) duplicates += other.get();
  return duplicates;
}

std::string_view Heap::own_name(ObjectId klass) const {
  auto found = class_names.find(klass);
  if (found != class_names.end()) return str(found->second);
  found = real_class_names.find(klass);
  return found == real_class_names.end() ? std::string_view{} : str(found->second);
}

std::string_view Heap::class_name(ObjectId id) const {
  ObjectId klass = class_of[id];
  return klass == kNoObject ? std::string_view{} : own_name(klass);
}

std::string Heap::class_label(ObjectId id) const {
  if (type[id] == ObjectType::kImemo) return fmt::format("(IMEMO:{})", str(detail[id]));
  std::string label;
  if (std::string_view name = class_name(id); !name.empty()) {
    label = name;
  } else if (class_of[id] != kNoObject) {
    label = fmt::format("#<Class:{:#x}>", address[class_of[id]]);
  }
  // A DATA object's class says little (Ruby's own tables are "Object"); its C struct says
  // what it is.
  if (type[id] == ObjectType::kData && detail[id] != 0) {
    return label.empty() ? fmt::format("(DATA:{})", str(detail[id]))
                         : fmt::format("{} ({})", label, str(detail[id]));
  }
  if (!label.empty()) return label;
  return fmt::format("({})", object_type_name(type[id]));
}

// The object a singleton class belongs to: among the class's references (Ruby writes its
// `__attached__` there), the one whose class it is; kNoObject when the dump does not say.
ObjectId Heap::attached_object(ObjectId singleton) const {
  for (ObjectId target : references(singleton))  // an IMEMO's "class" is its owner, not its class
    if (target != singleton && class_of[target] == singleton && type[target] != ObjectType::kImemo) return target;
  return kNoObject;
}

std::string Heap::object_label(ObjectId id) const { return object_label(id, 0); }

std::string Heap::object_label(ObjectId id, int depth) const {
  if (type[id] != ObjectType::kClass && type[id] != ObjectType::kModule) return class_label(id);
  if (auto found = class_names.find(id); found != class_names.end()) return std::string(str(found->second));
  const std::string anonymous = fmt::format("#<{}:{:#x}>", type[id] == ObjectType::kModule ? "Module" : "Class", address[id]);
  // A singleton class as Ruby names it (and the gem's stats): #<Class:Node> for a class's,
  // #<Class:#<Class:Node>> one level up, #<Class:#<Object>> for an ordinary object's.
  if (ObjectId attached = (flags[id] & kFlagSingleton) != 0 && depth < 8 ? attached_object(id) : kNoObject;
      attached != kNoObject) {
    const bool is_class = type[attached] == ObjectType::kClass || type[attached] == ObjectType::kModule;
    return fmt::format("#<Class:{}>", is_class ? object_label(attached, depth + 1) : "#<" + class_label(attached) + ">");
  }
  if (auto found = real_class_names.find(id); found != real_class_names.end()) {
    const std::string_view owner = str(found->second);
    const bool vowel = !owner.empty() && std::string_view("AEIOU").find(owner.front()) != std::string_view::npos;
    return fmt::format("{} (singleton class of {} {})", anonymous, vowel ? "an" : "a", owner);
  }
  return anonymous;
}

std::string Heap::site_label(ObjectId id) const {
  const Site& s = sites[site[id]];
  if (s.file == 0) return {};
  return fmt::format("{}:{}", str(s.file), s.line);
}

}  // namespace memprof::heap
