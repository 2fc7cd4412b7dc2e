#include "profile/protobuf_writer.h"

namespace memprof::profile {
namespace {

constexpr uint32_t kVarint = 0;
constexpr uint32_t kLengthDelimited = 2;

void append_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

}  // namespace

void ProtobufWriter::key(uint32_t field, uint32_t wire_type) {
  varint((uint64_t{field} << 3) | wire_type);
}

void ProtobufWriter::varint(uint64_t value) { append_varint(bytes_, value); }

void ProtobufWriter::uint64_field(uint32_t field, uint64_t value) {
  key(field, kVarint);
  varint(value);
}

void ProtobufWriter::int64_field(uint32_t field, int64_t value) {
  uint64_field(field, static_cast<uint64_t>(value));
}

void ProtobufWriter::bytes_field(uint32_t field, std::string_view bytes) {
  key(field, kLengthDelimited);
  varint(bytes.size());
  bytes_.append(bytes);
}

void ProtobufWriter::packed_uint64_field(uint32_t field, std::span<const uint64_t> values) {
  std::string packed;
  for (uint64_t value : values) append_varint(packed, value);
  bytes_field(field, packed);
}

void ProtobufWriter::packed_int64_field(uint32_t field, std::span<const int64_t> values) {
  std::string packed;
  for (int64_t value : values) append_varint(packed, static_cast<uint64_t>(value));
  bytes_field(field, packed);
}

}  // namespace memprof::profile
