#include "core/track/dump_annotate.h"

#include <gtest/gtest.h>

#include <sstream>
#include <tuple>

namespace memprof::track {
namespace {

std::optional<SourceLocation> known(uintptr_t address) {
  if (address == 0x7f0000001000) return SourceLocation{"/app/a \"q\".rb", 12, std::nullopt};
  if (address == 0x7f0000003000) return SourceLocation{"/app/b.rb", 3, 41};
  return std::nullopt;
}

// A whole dump through annotate_dump, with `known`'s sites.
struct Annotated {
  AnnotateCounts counts;
  std::string text;
};
Annotated annotated(const std::string& dump, const OwnObject& own = nullptr,
                    const ParentView* parent = nullptr) {
  std::istringstream in(dump);
  std::ostringstream out;
  auto counts = annotate_dump(in, out, known, own, parent);
  EXPECT_TRUE(counts.ok()) << counts.message();
  return {counts.ok() ? *counts : AnnotateCounts{}, out.str()};
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

TEST(DumpAnnotate, LeavesUnknownRootAndAgreeingLinesAlone) {
  std::string unknown = R"({"address":"0x7f0000002000", "type":"ARRAY"})";
  EXPECT_EQ(annotate_dump_line(unknown, known), unknown);
  std::string root = R"({"type":"ROOT", "root":"vm", "references":["0x7f0000001000"]})";
  EXPECT_EQ(annotate_dump_line(root, known), root);
  // Ruby's tracing saw the same allocation: its line stays, method name included.
  std::string agreeing = R"({"address":"0x7f0000003000", "type":"HASH", "file":"/app/b.rb", "line":3, )"
                         R"("method":"new", "generation":41, "memsize":160})";
  EXPECT_EQ(annotate_dump_line(agreeing, known), agreeing);
}

// Ruby's table keeps the entry of an object freed after ObjectSpace.trace_object_allocations { }
// ended, and a new object in its slot showed that object's site: Memprof.dump_all charged 4,502
// of 5,000 leaked Strings to the line of the traced block (before, a line with "file" was kept).
TEST(DumpAnnotate, ReplacesRubysFieldsOfAnOlderObjectInTheSlot) {
  EXPECT_EQ(annotate_dump_line(R"({"address":"0x7f0000003000", "type":"STRING", "value":"a", )"
                               R"("file":"old \"x\".rb", "line":2, "method":"m\"n", "generation":7, )"
                               R"("memsize":40, "flags":{"wb_protected":true}})",
                               known),
            R"({"address":"0x7f0000003000", "type":"STRING", "value":"a", "file":"/app/b.rb", "line":3, )"
            R"("generation":41, "memsize":40, "flags":{"wb_protected":true}})");
  // Without a method or a generation, and memprof's without a generation either.
  EXPECT_EQ(annotate_dump_line(R"({"address":"0x7f0000001000", "file":"x.rb", "line":1})", known),
            R"({"address":"0x7f0000001000", "file":"/app/a \"q\".rb", "line":12})");
  // Not as Ruby writes them (a file name with a raw quote): left alone.
  std::string odd = R"({"address":"0x7f0000001000", "file":"a"b.rb", "line":1})";
  EXPECT_EQ(annotate_dump_line(odd, known), odd);
}

TEST(DumpAnnotate, StreamsAndCounts) {
  const Annotated result = annotated(
      "{\"type\":\"ROOT\", \"root\":\"vm\"}\n"
      "{\"address\":\"0x7f0000001000\", \"type\":\"STRING\"}\n"
      "{\"address\":\"0x7f0000002000\", \"type\":\"STRING\"}\n");
  EXPECT_EQ(result.counts.lines, 3u);
  EXPECT_EQ(result.counts.annotated, 1u);
  EXPECT_EQ(result.text,
            "{\"type\":\"ROOT\", \"root\":\"vm\"}\n"
            "{\"address\":\"0x7f0000001000\", \"type\":\"STRING\", \"file\":\"/app/a \\\"q\\\".rb\", "
            "\"line\":12}\n"
            "{\"address\":\"0x7f0000002000\", \"type\":\"STRING\"}\n");
}

// The objects the dump's writer made: annotated as any other (with the site the lookup has,
// 0x...3000, or none, 0x...4000; Ruby's fields kept, 0x...5000), then marked. The others as before.
TEST(DumpAnnotate, MarksTheWritersOwnObjects) {
  auto own = [](uintptr_t address) {
    return address == 0x7f0000003000 || address == 0x7f0000004000 || address == 0x7f0000005000;
  };
  const Annotated result = annotated(
      "{\"address\":\"0x7f0000001000\", \"type\":\"STRING\"}\n"
      "{\"address\":\"0x7f0000003000\", \"type\":\"DATA\"}\n"
      "{\"address\":\"0x7f0000004000\", \"type\":\"FILE\"}\n"
      "{\"address\":\"0x7f0000005000\", \"type\":\"STRING\", \"file\":\"x.rb\", \"line\":1, \"generation\":7}\n"
      "{\"type\":\"ROOT\", \"root\":\"vm\"}\n",
      own);
  EXPECT_EQ(std::tuple(result.counts.lines, result.counts.annotated, result.counts.own), std::tuple(5, 1, 3));
  const std::string expected = R"({"address":"0x7f0000001000", "type":"STRING", "file":"/app/a \"q\".rb", "line":12}
{"address":"0x7f0000003000", "type":"DATA", "file":"/app/b.rb", "line":3, "generation":41, "memprof_own":true}
{"address":"0x7f0000004000", "type":"FILE", "memprof_own":true}
{"address":"0x7f0000005000", "type":"STRING", "file":"x.rb", "line":1, "generation":7, "memprof_own":true}
{"type":"ROOT", "root":"vm"}
)";
  EXPECT_EQ(result.text, expected);
}

// A dump written in a forked child: the parent's roots replace the child's (written first, where
// Ruby writes them), and its threads' references replace theirs, or are added to a thread line
// that has none; everything else, site annotation included, is as without.
TEST(DumpAnnotate, WritesTheParentsRootsAndThreadReferencesInAChildsDump) {
  const ParentView parent{
      "{\"type\":\"ROOT\", \"root\":\"vm\", \"references\":[\"0x7f0000006000\", \"0x7f0000007000\"]}\n"
      "{\"type\":\"ROOT\", \"root\":\"machine_context\", \"references\":[\"0x7f0000001000\"]}\n",
      {{0x7f0000006000, "[\"0x7f0000008000\", \"0x7f0000009000\"]"}, {0x7f0000007000, "[\"0x7f0000008000\"]"}}};
  const Annotated result = annotated(
      "{\"type\":\"ROOT\", \"root\":\"vm\", \"references\":[\"0x7f0000006000\"]}\n"
      "{\"address\":\"0x7f0000001000\", \"type\":\"STRING\"}\n"
      "{\"address\":\"0x7f0000006000\", \"type\":\"DATA\", \"struct\":\"VM/thread\", \"references\":[\"0x7f0000005000\"], \"memsize\":416}\n"
      "{\"address\":\"0x7f0000007000\", \"type\":\"DATA\", \"struct\":\"VM/thread\", \"memsize\":416}\n"
      "{\"address\":\"0x7f0000008000\", \"type\":\"ARRAY\", \"references\":[\"0x7f0000001000\"]}\n",
      nullptr, &parent);
  const std::string expected = R"({"type":"ROOT", "root":"vm", "references":["0x7f0000006000", "0x7f0000007000"]}
{"type":"ROOT", "root":"machine_context", "references":["0x7f0000001000"]}
{"address":"0x7f0000001000", "type":"STRING", "file":"/app/a \"q\".rb", "line":12}
{"address":"0x7f0000006000", "type":"DATA", "struct":"VM/thread", "references":["0x7f0000008000", "0x7f0000009000"], "memsize":416}
{"address":"0x7f0000007000", "type":"DATA", "struct":"VM/thread", "memsize":416, "references":["0x7f0000008000"]}
{"address":"0x7f0000008000", "type":"ARRAY", "references":["0x7f0000001000"]}
)";
  EXPECT_EQ(result.text, expected);
  EXPECT_EQ(result.counts.lines, 5u);
}

}  // namespace
}  // namespace memprof::track
