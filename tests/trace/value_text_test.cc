// trace/value_text.h: ltrace's notation for single values, each form exactly.
#include "trace/value_text.h"

#include <gtest/gtest.h>

#include <bit>
#include <memory>

namespace memprof::trace {
namespace {

Type type(BaseType base, Lens lens = Lens::kPlain) {
  Type t;
  t.base = base;
  t.lens = lens;
  return t;
}

std::string escaped(unsigned char c) {
  std::string out;
  append_escaped_char(out, c);
  return out;
}

TEST(ValueText, IntegersUseTheirWidthAndSign) {
  EXPECT_EQ(integer_text(type(BaseType::kInt), 0xffffffff), "-1");
  EXPECT_EQ(integer_text(type(BaseType::kInt), 0x1'0000'0005), "5");  // the high half is not the int's
  EXPECT_EQ(integer_text(type(BaseType::kUInt), 0xffffffff), "4294967295");
  EXPECT_EQ(integer_text(type(BaseType::kShort), 0x8000), "-32768");
  EXPECT_EQ(integer_text(type(BaseType::kUShort), 0xffff8000), "32768");
  EXPECT_EQ(integer_text(type(BaseType::kLong), 0x8000000000000000), "-9223372036854775808");
  EXPECT_EQ(integer_text(type(BaseType::kULong), 0x8000000000000000), "9223372036854775808");
}

TEST(ValueText, AddressesAreHexWithZeroBare) {
  EXPECT_EQ(integer_text(type(BaseType::kAddress), 0), "0");
  EXPECT_EQ(integer_text(type(BaseType::kAddress), 0x7ffd12345678), "0x7ffd12345678");
  EXPECT_EQ(hex_text(0), "0");
  EXPECT_EQ(hex_text(255), "0xff");
}

TEST(ValueText, Lenses) {
  EXPECT_EQ(integer_text(type(BaseType::kInt, Lens::kHex), 0xffffffffffffffff), "0xffffffff");
  EXPECT_EQ(integer_text(type(BaseType::kInt, Lens::kHex), 0), "0");
  EXPECT_EQ(integer_text(type(BaseType::kChar, Lens::kHex), 0x41), "0x41");
  EXPECT_EQ(integer_text(type(BaseType::kInt, Lens::kOctal), 0755), "0755");
  EXPECT_EQ(integer_text(type(BaseType::kInt, Lens::kOctal), 0), "00");
  EXPECT_EQ(integer_text(type(BaseType::kInt, Lens::kBool), 0x100000000), "false");  // only the int's bits
  EXPECT_EQ(integer_text(type(BaseType::kChar, Lens::kBool), 2), "true");
  EXPECT_EQ(integer_text(type(BaseType::kInt, Lens::kHidden), 2), "");
}

// ltrace.conf(5)'s examples: bits 3-5 and 7; more set than clear shows the clear ones.
TEST(ValueText, BitVectors) {
  EXPECT_EQ(integer_text(type(BaseType::kULong, Lens::kBitvec), 0xb8), "<3-5,7>");
  EXPECT_EQ(integer_text(type(BaseType::kUInt, Lens::kBitvec), 0xfffffffe), "~<0>");
  EXPECT_EQ(integer_text(type(BaseType::kUInt, Lens::kBitvec), 0xffffffff), "~<>");
  EXPECT_EQ(integer_text(type(BaseType::kUShort, Lens::kBitvec), 0x0102), "<1,8>");
  EXPECT_EQ(integer_text(type(BaseType::kChar, Lens::kBitvec), 0), "<>");
  EXPECT_EQ(integer_text(type(BaseType::kULong, Lens::kBitvec), 0x8000000000000001), "<0,63>");
}

TEST(ValueText, EnumsNameKnownValues) {
  Type color = type(BaseType::kInt, Lens::kEnum);
  color.constants = std::make_shared<const std::vector<EnumConstant>>(
      std::vector<EnumConstant>{{"MINUS", -1}, {"RED", 1}});
  EXPECT_EQ(integer_text(color, 1), "RED");
  EXPECT_EQ(integer_text(color, 0xffffffff), "MINUS");  // an int's -1
  EXPECT_EQ(integer_text(color, 3), "3");
}

TEST(ValueText, CharactersEscapeLikeLtrace) {
  EXPECT_EQ(integer_text(type(BaseType::kChar), 'a'), "'a'");
  EXPECT_EQ(integer_text(type(BaseType::kChar), 0x141), "'A'");  // the low byte only
  EXPECT_EQ(escaped('\0'), "\\0");
  EXPECT_EQ(escaped('\a'), "\\a");
  EXPECT_EQ(escaped('\b'), "\\b");
  EXPECT_EQ(escaped('\t'), "\\t");
  EXPECT_EQ(escaped('\n'), "\\n");
  EXPECT_EQ(escaped('\v'), "\\v");
  EXPECT_EQ(escaped('\f'), "\\f");
  EXPECT_EQ(escaped('\r'), "\\r");
  EXPECT_EQ(escaped('\\'), "\\\\");
  EXPECT_EQ(escaped('"'), "\"");
  EXPECT_EQ(escaped('\''), "'");
  EXPECT_EQ(escaped(' '), " ");
  EXPECT_EQ(escaped('~'), "~");
  EXPECT_EQ(escaped(0x1b), "\\033");
  EXPECT_EQ(escaped(0x7f), "\\177");
  EXPECT_EQ(escaped(0xe9), "\\351");
}

TEST(ValueText, QuotedStrings) {
  EXPECT_EQ(quoted_string("a\"b", false), "\"a\"b\"");
  EXPECT_EQ(quoted_string("", false), "\"\"");
  EXPECT_EQ(quoted_string(std::string_view("x\0y", 3), true), "\"x\\0y\"...");
}

TEST(ValueText, FloatingPointIsPrintfPercentF) {
  EXPECT_EQ(floating_text(type(BaseType::kDouble), std::bit_cast<uint64_t>(1.0 / 3)), "0.333333");
  EXPECT_EQ(floating_text(type(BaseType::kDouble), std::bit_cast<uint64_t>(-2.5e10)), "-25000000000.000000");
  // A float is the low 4 bytes; whatever is above them is not part of it.
  EXPECT_EQ(floating_text(type(BaseType::kFloat), 0xdeadbeef00000000 | std::bit_cast<uint32_t>(0.1f)), "0.100000");
  EXPECT_EQ(floating_text(type(BaseType::kDouble, Lens::kHex), std::bit_cast<uint64_t>(1.5)), "0x1.8p+0");
}

TEST(ValueText, GuessesDecimalForSmallValuesAndHexForOthers) {
  EXPECT_EQ(guessed_text(10000), "10000");
  EXPECT_EQ(guessed_text(static_cast<uint64_t>(-10000)), "-10000");
  EXPECT_EQ(guessed_text(10001), "0x2711");
  EXPECT_EQ(guessed_text(static_cast<uint64_t>(-10001)), "0xffffffffffffd8ef");
  EXPECT_EQ(guessed_text(0), "0");
}

}  // namespace
}  // namespace memprof::trace
