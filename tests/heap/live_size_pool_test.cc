// analyze, diff and heapmap on dumps a matrix Ruby (3.3, 3.4; shared or static, see
// cmake/ruby_tests.cmake) writes while this test runs: the committed fixtures pin one build of
// each version, this checks the Ruby at hand. CMake runs it once per matrix Ruby with
// MEMPROF_TEST_RUBY set (tests LiveSizePoolDump@3.4-static, ...); without it the test skips.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "heap/units.h"
#include "test_support.h"

namespace memprof::heap {
namespace {

using memprof::testing::TempDir;
using testing::CommandResult;

constexpr uint64_t kLeaks = 40;  // LEAKS in make_size_pool_dumps.rb

TEST(LiveSizePoolDump, AnalyzeDiffAndHeapmapOnADumpWrittenNow) {
  const char* ruby = std::getenv("MEMPROF_TEST_RUBY");
  if (ruby == nullptr || *ruby == '\0') {
    GTEST_SKIP() << "no matrix Ruby given (MEMPROF_TEST_RUBY); the tests LiveSizePoolDump@NAME "
                    "run this for each Ruby `scripts/rubies list` shows (build them with "
                    "`scripts/rubies build`)";
  }
  TempDir dir;
  const auto made = memprof::testing::run_command(
      {ruby, "--disable-gems", testing::fixture_path("make_size_pool_dumps.rb"), dir.file("live")});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto memprof = [&](const std::string& args) {
    return memprof::testing::run_command(
        {"/bin/sh", "-c", fmt::format("cd '{}' && exec '{}' {}", dir.path(), MEMPROF_BINARY, args)});
  };

  // analyze: every object line counted, SHAPE lines apart, nothing unreadable.
  const testing::ScannedDump scanned = testing::scan_dump(testing::read_file(dir.file("live_b.json")));
  EXPECT_GT(scanned.shapes, 0u);
  CommandResult analyze = memprof("analyze live_b.json --json --top 0");
  ASSERT_EQ(analyze.exit_code, 0) << analyze.err;
  EXPECT_EQ(analyze.err, "");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(analyze.out).get(doc), simdjson::SUCCESS) << analyze.out;
  EXPECT_EQ(uint64_t(doc["total"]["count"]), scanned.objects);
  EXPECT_EQ(uint64_t(doc["total"]["memsize"]), scanned.memsize);
  EXPECT_EQ(uint64_t(doc["bad_lines"]), 0u);
  for (simdjson::dom::element row : doc["by_type"].get_array()) {
    EXPECT_NE(std::string_view(row["name"]), "UNKNOWN");
  }

  // diff: exactly the leaked Leaky objects, across GC.compact.
  CommandResult diff = memprof("diff live_a.json live_b.json --json --top 0 --class Leaky");
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  simdjson::dom::parser diff_parser;
  ASSERT_EQ(diff_parser.parse(diff.out).get(doc), simdjson::SUCCESS) << diff.out;
  EXPECT_EQ(uint64_t(doc["new"]["count"]), kLeaks);
  EXPECT_EQ(uint64_t(doc["undecided"]["count"]), 0u);

  // heapmap: every object placed, in one section per size pool, all five pools present.
  CommandResult heapmap = memprof("heapmap live_b.json -o live.png");
  ASSERT_EQ(heapmap.exit_code, 0) << heapmap.err;
  EXPECT_EQ(heapmap.err, "");
  EXPECT_NE(heapmap.out.find(fmt::format(" slots, {} objects, ", count_text(scanned.objects))), std::string::npos)
      << heapmap.out;
  for (int slot_size : {40, 80, 160, 320, 640}) {
    EXPECT_NE(heapmap.out.find(fmt::format("\n  {}-byte slots: ", slot_size)), std::string::npos)
        << heapmap.out;
  }
}

}  // namespace
}  // namespace memprof::heap
