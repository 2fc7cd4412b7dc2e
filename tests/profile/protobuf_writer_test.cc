#include "profile/protobuf_writer.h"

#include <gtest/gtest.h>

#include <vector>

namespace memprof::profile {
namespace {

// The bytes as "08 ac 02", for readable failures.
std::string hex(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out += ' ';
    out += "0123456789abcdef"[c >> 4];
    out += "0123456789abcdef"[c & 0xf];
  }
  return out;
}

std::string uint64_bytes(uint64_t value) {
  ProtobufWriter writer;
  writer.uint64_field(1, value);
  return hex(writer.bytes());
}

TEST(ProtobufWriter, VarintsTakeSevenBitsPerByteLowFirst) {
  EXPECT_EQ(uint64_bytes(0), "08 00");  // key: field 1, wire type 0
  EXPECT_EQ(uint64_bytes(1), "08 01");
  EXPECT_EQ(uint64_bytes(127), "08 7f");
  EXPECT_EQ(uint64_bytes(128), "08 80 01");
  EXPECT_EQ(uint64_bytes(300), "08 ac 02");
  EXPECT_EQ(uint64_bytes(UINT64_MAX), "08 ff ff ff ff ff ff ff ff ff 01");
}

TEST(ProtobufWriter, NegativeInt64TakesTenBytes) {
  ProtobufWriter writer;
  writer.int64_field(2, -1);
  writer.int64_field(2, -300);
  EXPECT_EQ(hex(writer.bytes()),
            "10 ff ff ff ff ff ff ff ff ff 01 "
            "10 d4 fd ff ff ff ff ff ff ff 01");
}

TEST(ProtobufWriter, KeysOfLargeFieldNumbersAreVarintsToo) {
  ProtobufWriter writer;
  writer.bool_field(16, true);  // (16 << 3) | 0 = 128
  writer.bool_field(15, false);
  EXPECT_EQ(hex(writer.bytes()), "80 01 01 78 00");
}

TEST(ProtobufWriter, StringsAndMessagesAreLengthDelimited) {
  ProtobufWriter line;
  line.uint64_field(1, 3);
  line.int64_field(2, 300);
  ProtobufWriter location;
  location.uint64_field(1, 1);
  location.message_field(4, line);
  location.bytes_field(6, "");
  location.bytes_field(6, "ab");
  EXPECT_EQ(hex(location.bytes()), "08 01 22 05 08 03 10 ac 02 32 00 32 02 61 62");
}

TEST(ProtobufWriter, PackedRepeatedFieldsAreOneLengthDelimitedField) {
  ProtobufWriter writer;
  const std::vector<uint64_t> ids = {1, 128, 2};
  const std::vector<int64_t> values = {0, -1};
  writer.packed_uint64_field(1, ids);
  writer.packed_int64_field(2, values);
  writer.packed_uint64_field(1, std::vector<uint64_t>{});
  EXPECT_EQ(hex(writer.bytes()),
            "0a 04 01 80 01 02 "
            "12 0b 00 ff ff ff ff ff ff ff ff ff 01 "
            "0a 00");
}

}  // namespace
}  // namespace memprof::profile
