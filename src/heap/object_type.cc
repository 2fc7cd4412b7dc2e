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

// Type names are at most 8 bytes: packed into one integer each, a lookup is a few integer
// compares per dump line instead of string compares.
constexpr size_t kMaxNameLength = 8;

constexpr uint64_t pack(std::string_view name) {
  uint64_t word = 0;
  for (size_t i = 0; i < name.size(); ++i) word |= uint64_t{static_cast<unsigned char>(name[i])} << (8 * i);
  return word;
}

struct PackedNames {
  std::array<uint64_t, kObjectTypeCount> words{};
  constexpr PackedNames() {
    for (size_t i = 0; i < kNames.size(); ++i) words[i] = pack(kNames[i]);
  }
};
constexpr PackedNames kPacked;

}  // namespace

ObjectType parse_object_type(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return ObjectType::kUnknown;
  const uint64_t word = pack(name);
  for (size_t i = 1; i < kPacked.words.size(); ++i) {
    if (kPacked.words[i] == word) return static_cast<ObjectType>(i);
  }
  return ObjectType::kUnknown;
}

std::string_view object_type_name(ObjectType type) {
  auto index = static_cast<size_t>(type);
  return index < kNames.size() ? kNames[index] : kNames[0];
}

}  // namespace memprof::heap
