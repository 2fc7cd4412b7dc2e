// core/util/json_escape.h: the escaped bytes are part of the heap reports' golden files and of
// annotated dumps, so every form is asserted exactly.
#include "core/util/json_escape.h"

#include <gtest/gtest.h>

#include <string>

namespace memprof {
namespace {

std::string escaped(std::string_view text) {
  std::string out;
  append_json_escaped(out, text);
  return out;
}

TEST(JsonEscape, EscapesControlCharacters) {
  std::string out;
  append_json_escaped(out, std::string("a\\b\n\x01", 5));
  EXPECT_EQ(out, "a\\\\b\\n\\u0001");
}

TEST(JsonEscape, QuotesAndBackslashesGetABackslash) {
  EXPECT_EQ(escaped(R"(say "hi" \ bye)"), R"(say \"hi\" \\ bye)");
}

TEST(JsonEscape, NewlineTabAndCarriageReturnUseTheirShortForms) {
  EXPECT_EQ(escaped("a\nb\tc\rd"), "a\\nb\\tc\\rd");
}

TEST(JsonEscape, OtherControlBytesAreLowerCaseUnicodeEscapes) {
  EXPECT_EQ(escaped(std::string("\0\x08\x0c\x1b\x1f", 5)), "\\u0000\\u0008\\u000c\\u001b\\u001f");
}

TEST(JsonEscape, SpaceDeleteAndUtf8AreCopied) {
  EXPECT_EQ(escaped(" \x7f/"), " \x7f/");
  const std::string utf8 = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x92\x8e";  // café € and a 4-byte emoji
  EXPECT_EQ(escaped(utf8), utf8);
  EXPECT_EQ(escaped("\xff\xfe"), "\xff\xfe");  // not UTF-8 either: still copied, never rejected
}

TEST(JsonEscape, AppendsWithoutQuotesOrClearing) {
  std::string out = "\"file\":\"";
  append_json_escaped(out, "");
  append_json_escaped(out, "x\"y");
  EXPECT_EQ(out, "\"file\":\"x\\\"y");
}

}  // namespace
}  // namespace memprof
