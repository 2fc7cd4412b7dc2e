// The protobuf wire format, written by hand for the handful of messages profile.proto has: a
// protobuf library and its code generator would be a large dependency for five message types.
// Only what pprof's messages use: varints (wire type 0), length-delimited bytes (wire type 2) for
// strings and nested messages, and packed repeated varints.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace memprof::profile {

class ProtobufWriter {
 public:
  // uint64, and bool as 0 or 1.
  void uint64_field(uint32_t field, uint64_t value);
  // int64 as protobuf encodes it: two's complement, so a negative value takes ten bytes.
  void int64_field(uint32_t field, int64_t value);
  void bool_field(uint32_t field, bool value) { uint64_field(field, value ? 1 : 0); }
  // A string, or a nested message's bytes.
  void bytes_field(uint32_t field, std::string_view bytes);
  void message_field(uint32_t field, const ProtobufWriter& message) {
    bytes_field(field, message.bytes());
  }
  // A repeated uint64 or int64 field in the packed encoding (proto3's default): one
  // length-delimited field holding the varints.
  void packed_uint64_field(uint32_t field, std::span<const uint64_t> values);
  void packed_int64_field(uint32_t field, std::span<const int64_t> values);

  const std::string& bytes() const { return bytes_; }

 private:
  void key(uint32_t field, uint32_t wire_type);
  void varint(uint64_t value);

  std::string bytes_;
};

}  // namespace memprof::profile
