#include "heap/object_type.h"

#include <array>

namespace memprof::heap {
namespace {

constexpr std::array<std::string_view, kObjectTypeCount> kNames = {
    "UNKNOWN", "OBJECT",  "CLASS",  "MODULE", "FLOAT", "STRING", "REGEXP", "ARRAY",
    "HASH",    "STRUCT",  "BIGNUM", "FILE",   "DATA",  "MATCH",  "COMPLEX", "RATIONAL",
    "NIL",     "TRUE",    "FALSE",  "SYMBOL", "FIXNUM", "UNDEF", "IMEMO",  "NODE",
    "ICLASS",  "ZOMBIE",  "MOVED",  "PAYLOAD",
};

}  // namespace

ObjectType parse_object_type(std::string_view name) {
  // Linear scan: 28 short names, and the loader caches the result per distinct spelling.
  for (int i = 1; i < kObjectTypeCount; ++i) {
    if (kNames[static_cast<size_t>(i)] == name) return static_cast<ObjectType>(i);
  }
  return ObjectType::kUnknown;
}

std::string_view object_type_name(ObjectType type) {
  auto index = static_cast<size_t>(type);
  return index < kNames.size() ? kNames[index] : kNames[0];
}

}  // namespace memprof::heap
