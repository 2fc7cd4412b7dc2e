// Ruby object types as written in the "type" field of ObjectSpace.dump_all lines (the T_ names
// without the prefix). The list covers Ruby 2.7-3.4; a name this table does not know is kept as
// ObjectType::kUnknown so a newer Ruby never makes a dump unreadable.
#pragma once

#include <cstdint>
#include <string_view>

namespace memprof::heap {

enum class ObjectType : uint8_t {
  kUnknown = 0,
  kObject,
  kClass,
  kModule,
  kFloat,
  kString,
  kRegexp,
  kArray,
  kHash,
  kStruct,
  kBignum,
  kFile,
  kData,
  kMatch,
  kComplex,
  kRational,
  kNil,
  kTrue,
  kFalse,
  kSymbol,
  kFixnum,
  kUndef,
  kImemo,
  kNode,
  kIclass,
  kZombie,
  kMoved,
  kPayload,  // Ruby 3.2+ variable-width allocation: the body of a multi-slot object.
  kCount,
};

inline constexpr int kObjectTypeCount = static_cast<int>(ObjectType::kCount);

// "STRING" -> kString; unknown names -> kUnknown.
ObjectType parse_object_type(std::string_view name);
// kString -> "STRING"; kUnknown -> "UNKNOWN".
std::string_view object_type_name(ObjectType type);

}  // namespace memprof::heap
