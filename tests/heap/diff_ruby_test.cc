// `memprof diff` on dumps the real ruby writes as a process leaks (fixtures/make_diff_dumps.rb):
// a leak into recycled slots and a leak across GC.compact must both be counted whole, and dumps
// in the wrong order or from two processes refused.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fmt/format.h>

#include "test_support.h"

namespace memprof::heap {
namespace {

using memprof::testing::TempDir;
using testing::CommandResult;
using testing::fixture_path;

class RubyDiff : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    first_ = new TempDir();
    second_ = new TempDir();
    for (TempDir* dir : {first_, second_}) {
      const auto run = memprof::testing::run_command(
          {"ruby", "--disable-gems", fixture_path("make_diff_dumps.rb"), dir->path()});
      ASSERT_EQ(run.exit_code, 0) << run.err;
    }
  }
  static void TearDownTestSuite() {
    delete first_;
    delete second_;
  }
  // memprof ARGS run in the first process's directory.
  static CommandResult memprof(const std::string& args) {
    return memprof::testing::run_command(
        {"/bin/sh", "-c", fmt::format("cd '{}' && exec '{}' {}", first_->path(), MEMPROF_BINARY, args)});
  }
  // Objects of class Leaky in the kept rows of `diff --json` output.
  static uint64_t leaky_objects(const std::string& json) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    EXPECT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
    uint64_t count = 0;
    for (simdjson::dom::element row : doc["by_location_and_class"].get_array()) {
      if (std::string_view(row["class"]) == "Leaky") count += uint64_t(row["count"]);
    }
    return count;
  }

  static TempDir* first_;
  static TempDir* second_;
};
TempDir* RubyDiff::first_ = nullptr;
TempDir* RubyDiff::second_ = nullptr;

TEST_F(RubyDiff, ALeakIntoRecycledSlotsFromTheSameLineIsNew) {
  CommandResult r = memprof("diff recycled_a.json recycled_b.json --json --top 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(leaky_objects(r.out), 5000u);
}

TEST_F(RubyDiff, ALeakAcrossGcCompactIsCountedWhole) {
  CommandResult r = memprof("diff compact_a.json compact_b.json --json --top 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(leaky_objects(r.out), 5000u);
  // Some leaked objects were moved and lost their generation: the class count decided them.
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS);
  EXPECT_GT(uint64_t(doc["decided"]["new_by_class_count"]), 0u);
}

// Objects of A's newest generation that B holds elsewhere may be A's, moved by compaction;
// A's garbage cannot be (before, B's 5,000 leaked objects were all taken for A's 5,000 dropped
// ones, moved, and none was new).
TEST_F(RubyDiff, ALeakInTheNewestGenerationOfAIsNotTakenForItsGarbage) {
  CommandResult r = memprof("diff boundary_a.json boundary_b.json --json --top 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(leaky_objects(r.out), 5000u);
}

TEST_F(RubyDiff, RefusesDumpsInTheWrongOrder) {
  CommandResult r = memprof("diff recycled_b.json recycled_a.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "memprof: recycled_a.json cannot have been taken after recycled_b.json: its newest "
            "allocation generation (2) is older than that of recycled_b.json (4); give the dumps "
            "in the order they were taken\n");
}

TEST_F(RubyDiff, RefusesDumpsOfTwoProcesses) {
  CommandResult r = memprof(fmt::format("diff recycled_a.json '{}'", second_->file("recycled_b.json")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, fmt::format("memprof: recycled_a.json and {} share no heap page: they come from "
                               "different processes (or one restarted in between)\n",
                               second_->file("recycled_b.json")));
  // In the order that looks wrong by generation too: two processes are said, not an order
  // (before, "recycled_a.json cannot have been taken after ...").
  CommandResult reversed = memprof(fmt::format("diff '{}' recycled_a.json", second_->file("recycled_b.json")));
  EXPECT_EQ(reversed.exit_code, 1);
  EXPECT_EQ(reversed.err, fmt::format("memprof: {} and recycled_a.json share no heap page: they come from "
                                      "different processes (or one restarted in between)\n",
                                      second_->file("recycled_b.json")));
}

}  // namespace
}  // namespace memprof::heap
