// parse_hex_address (the SWAR reader of dump addresses) against std::from_chars, on every
// length, every digit value in every position and every byte after the digits; and
// parse_address_text, which runs it on text that is not in a dump line.
#include "heap/hex_address.h"

#include <gtest/gtest.h>

#include <cctype>
#include <charconv>
#include <random>
#include <string>

#include "heap/record_parser.h"

namespace memprof::heap {
namespace {

// What an address string means: "0x" or "0X" and 1 to 16 hex digits, else 0.
uint64_t reference_address(std::string_view text) {
  if (text.size() < 3 || text.size() > 18 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) {
    return 0;
  }
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data() + 2, text.data() + text.size(), value, 16);
  return error == std::errc() && end == text.data() + text.size() ? value : 0;
}

// The string "text" as it sits in a dump line: opening quote, text, closing quote, then the
// rest of the line and its padding. Returns what parse_hex_address reads from it.
uint64_t parse_in_line(const std::string& text, const std::string& after = "\", \"type\":\"STRING\"}") {
  std::string line = "\"" + text + after + std::string(64, ' ');
  return parse_hex_address(line.data() + 1);
}

TEST(HexAddress, ReadsEveryLengthFromOneToSixteenDigits) {
  const std::string digits = "7fd92f8de428aB3c";
  for (size_t n = 1; n <= 16; ++n) {
    std::string text = "0x" + digits.substr(0, n);
    EXPECT_EQ(parse_in_line(text), reference_address(text)) << text;
    EXPECT_NE(parse_in_line(text), 0u) << text;
  }
  EXPECT_EQ(parse_in_line("0x7fd92f8de428"), 0x7fd92f8de428u);
  EXPECT_EQ(parse_in_line("0XFFFFFFFFFFFFFFFF"), 0xffffffffffffffffu);
  EXPECT_EQ(parse_in_line("0x0000000000000001"), 1u);
}

TEST(HexAddress, EveryDigitValueInEveryPosition) {
  const std::string hex = "0123456789abcdefABCDEF";
  for (size_t length = 1; length <= 16; ++length) {
    for (size_t position = 0; position < length; ++position) {
      for (char c : hex) {
        std::string text = "0x" + std::string(length, '5');
        text[2 + position] = c;
        ASSERT_EQ(parse_in_line(text), reference_address(text)) << text;
        ASSERT_EQ(parse_address_text(text), reference_address(text)) << text;
      }
    }
  }
}

TEST(HexAddress, RejectsWhatIsNotAnAddress) {
  for (const char* text : {"", "0", "0x", "x12", "1x12", "0y12", "00x12", "0x12g4", "0x-1", "0x 1",
                           "0x12345678901234567", "0x\\u0031", "address", "0x1.5"}) {
    EXPECT_EQ(parse_in_line(text), 0u) << text;
  }
  // Every byte value right after the digits, and in the middle of them: only the closing quote
  // ends an address.
  for (int byte = 1; byte < 256; ++byte) {
    const char c = static_cast<char>(byte);
    const bool hex = std::isxdigit(byte) != 0;
    std::string after(1, c);
    after += "\"}";
    uint64_t expected = c == '"' ? 0x7fd9 : 0;
    if (!hex) {
      EXPECT_EQ(parse_in_line("0x7fd9", after), expected) << byte;
    }
    std::string middle = std::string("0x7f") + c + "d9";
    if (!hex && c != '"') {
      EXPECT_EQ(parse_in_line(middle), 0u) << byte;
    }
  }
}

TEST(HexAddress, TextOutsideALineRejectsAQuoteInside) {
  EXPECT_EQ(parse_address_text("0x12\"34"), 0u);
  EXPECT_EQ(parse_address_text("0x1234"), 0x1234u);
}

TEST(HexAddress, AgreesWithFromCharsOnRandomStrings) {
  std::mt19937_64 random(7);
  const std::string alphabet = "0123456789abcdefABCDEFxXg\" \\";
  for (int trial = 0; trial < 200000; ++trial) {
    std::string text = random() % 4 == 0 ? "" : "0x";
    size_t length = random() % 20;
    for (size_t i = 0; i < length; ++i) {
      char c = random() % 8 == 0 ? alphabet[random() % alphabet.size()] : "0123456789abcdef"[random() % 16];
      if (c == '"') break;  // the string ends at its closing quote
      text += c;
    }
    ASSERT_EQ(parse_in_line(text), reference_address(text)) << text;
    ASSERT_EQ(parse_address_text(text), reference_address(text)) << text;
  }
}

}  // namespace
}  // namespace memprof::heap
