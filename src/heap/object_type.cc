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

// Names by length, so that one dump line costs a couple of fixed-length compares.
constexpr size_t kMaxNameLength = 8;
struct ByLength {
  std::array<std::array<ObjectType, 12>, kMaxNameLength + 1> types{};  // 10 names of 6 letters
  std::array<size_t, kMaxNameLength + 1> count{};
  constexpr ByLength() {
    for (size_t i = 1; i < kNames.size(); ++i) {
      size_t n = kNames[i].size();
      types[n][count[n]++] = static_cast<ObjectType>(i);
    }
  }
};
constexpr ByLength kByLength;

}  // namespace

ObjectType parse_object_type(std::string_view name) {
  if (name.size() > kMaxNameLength) return ObjectType::kUnknown;
  const auto& candidates = kByLength.types[name.size()];
  for (size_t i = 0; i < kByLength.count[name.size()]; ++i) {
    ObjectType type = candidates[i];
    if (kNames[static_cast<size_t>(type)] == name) return type;
  }
  return ObjectType::kUnknown;
}

std::string_view object_type_name(ObjectType type) {
  auto index = static_cast<size_t>(type);
  return index < kNames.size() ? kNames[index] : kNames[0];
}

}  // namespace memprof::heap
