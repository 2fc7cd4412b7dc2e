#include "core/track/dump_annotate.h"

#include <gtest/gtest.h>

#include <sstream>

namespace memprof::track {
namespace {

std::optional<SourceLocation> known(uintptr_t address) {
  if (address == 0x7f0000001000) return SourceLocation{"/app/a \"q\".rb", 12, std::nullopt};
  if (address == 0x7f0000003000) return SourceLocation{"/app/b.rb", 3, 41};
  return std::nullopt;
}

TEST(DumpAnnotate, AddressOfObjectLinesOnly) {
  EXPECT_EQ(dump_line_address(R"({"address":"0x7f0000001000", "type":"STRING"})"),
            uintptr_t{0x7f0000001000});
  EXPECT_EQ(dump_line_address(R"({"type":"ROOT", "root":"vm", "references":[]})"), std::nullopt);
  EXPECT_EQ(dump_line_address(R"({"address":"0xZZ", "type":"STRING"})"), std::nullopt);
  EXPECT_EQ(dump_line_address(R"({"address":"0x12)"), std::nullopt);
  EXPECT_EQ(dump_line_address(""), std::nullopt);
}

TEST(DumpAnnotate, InsertsEscapedSiteBeforeTheClosingBrace) {
  EXPECT_EQ(annotate_dump_line(
                R"({"address":"0x7f0000001000", "type":"STRING", "flags":{"wb_protected":true}})",
                known),
            R"({"address":"0x7f0000001000", "type":"STRING", "flags":{"wb_protected":true}, )"
            R"("file":"/app/a \"q\".rb", "line":12})");
}

// As Ruby's allocation tracing writes it: `memprof diff` decides by it which objects are new.
TEST(DumpAnnotate, WritesTheGenerationWhenKnown) {
  EXPECT_EQ(annotate_dump_line(R"({"address":"0x7f0000003000", "type":"HASH"})", known),
            R"({"address":"0x7f0000003000", "type":"HASH", "file":"/app/b.rb", "line":3, )"
            R"("generation":41})");
}

TEST(DumpAnnotate, LeavesUnknownRootAndAlreadyAnnotatedLinesAlone) {
  std::string unknown = R"({"address":"0x7f0000002000", "type":"ARRAY"})";
  EXPECT_EQ(annotate_dump_line(unknown, known), unknown);
  std::string root = R"({"type":"ROOT", "root":"vm", "references":["0x7f0000001000"]})";
  EXPECT_EQ(annotate_dump_line(root, known), root);
  std::string traced = R"({"address":"0x7f0000001000", "file":"x.rb", "line":1})";
  EXPECT_EQ(annotate_dump_line(traced, known), traced);
}

TEST(DumpAnnotate, StreamsAndCounts) {
  std::istringstream in(
      "{\"type\":\"ROOT\", \"root\":\"vm\"}\n"
      "{\"address\":\"0x7f0000001000\", \"type\":\"STRING\"}\n"
      "{\"address\":\"0x7f0000002000\", \"type\":\"STRING\"}\n");
  std::ostringstream out;
  auto counts = annotate_dump(in, out, known);
  ASSERT_TRUE(counts.ok()) << counts.message();
  EXPECT_EQ(counts->lines, 3u);
  EXPECT_EQ(counts->annotated, 1u);
  EXPECT_EQ(out.str(),
            "{\"type\":\"ROOT\", \"root\":\"vm\"}\n"
            "{\"address\":\"0x7f0000001000\", \"type\":\"STRING\", \"file\":\"/app/a \\\"q\\\".rb\", "
            "\"line\":12}\n"
            "{\"address\":\"0x7f0000002000\", \"type\":\"STRING\"}\n");
}

}  // namespace
}  // namespace memprof::track
