// The --class, --site and --type options of `memprof analyze` and `memprof diff`: which objects a
// report looks at. The graph, reachability and retained sizes still cover the whole heap (what
// an object retains does not depend on what the report shows).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"
#include "heap/heap.h"

namespace memprof::heap {

// What Heap::class_label() depends on: the class object (none for IMEMO), the type and, for
// IMEMO and DATA objects, their detail string. Equal keys, equal labels.
struct ClassKey {
  ObjectId klass = kNoObject;
  StringId detail = 0;
  ObjectType type = ObjectType::kUnknown;
  bool operator==(const ClassKey&) const = default;
};
struct ClassKeyHash {
  size_t operator()(const ClassKey& key) const {
    return ((uint64_t{key.klass} << 32 | key.detail) * 0x9E3779B97F4A7C15ull) ^ static_cast<uint64_t>(key.type);
  }
};
ClassKey class_key(const Heap& heap, ObjectId id);

struct ObjectFilter {
  std::string class_label;  // exactly as reports show it (Heap::class_label); "" = any
  std::string site;         // "file:line" or "file", whole or its tail after a '/'; "" = any
  std::string type;         // object type, any case ("string", "DATA"); "" = any

  bool empty() const { return class_label.empty() && site.empty() && type.empty(); }
  // "class Foo, site app.rb:3, type STRING": for report headers.
  std::string describe() const;
};

// The objects of one heap a filter selects, decided for every object when it is made: the
// analyzer asks from several threads at once, so asking changes nothing.
class ObjectSelection {
 public:
  // Fails when `type` is not an object type name.
  static Result<ObjectSelection> make(const Heap& heap, const ObjectFilter& filter);

  bool operator()(ObjectId id) const { return all_ || selected_[id] != 0; }
  bool all() const { return all_; }

 private:
  bool all_ = true;
  std::vector<uint8_t> selected_;  // by ObjectId, unless all_
};

}  // namespace memprof::heap
