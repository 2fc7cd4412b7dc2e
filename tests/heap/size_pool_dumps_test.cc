// The memprof commands on dumps written by Ruby 3.3 and 3.4 (fixtures/make_size_pool_dumps.rb):
// SHAPE lines, "shape_id" and "slot_size" on every object, pages in five size pools. Golden text
// for analyze, path, diff and heapmap; exact counts checked against an independent scan of the
// dump and against what the script did (LEAKS = 40 leaked Leaky objects).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <string>

#include "heap/units.h"
#include "test_support.h"

namespace memprof::heap {
namespace {

using memprof::testing::TempDir;
using testing::CommandResult;
using testing::expect_golden;
using testing::fixture_address;
using testing::fixture_path;
using testing::read_file;
using testing::run_memprof;
using testing::unzstd;

constexpr uint64_t kLeaks = 40;  // LEAKS in make_size_pool_dumps.rb

struct SizePoolFixture {
  std::string name;     // file prefix: ruby33_a.json.zst, ruby33_addresses.txt, ...
  std::string version;  // RUBY_VERSION of the Ruby that wrote it
  // Of the 40 leaked payload Strings, those diff can tell are new. Ruby 3.3's GC.compact drops
  // the allocation info of the objects it moves (fixed in 3.4), and B has too many Strings for
  // class counts to decide the moved ones.
  uint64_t payload_strings_found;
};

void PrintTo(const SizePoolFixture& fixture, std::ostream* out) { *out << fixture.name; }

class SizePoolDumps : public ::testing::TestWithParam<SizePoolFixture> {
 protected:
  const std::string& name() const { return GetParam().name; }
  std::string dump(char side) const { return name() + "_" + side + ".json.zst"; }
  std::string address(const std::string& key) const {
    return fixture_address(key, name() + "_addresses.txt");
  }
  testing::ScannedDump scan(char side) const {
    return testing::scan_dump(unzstd(read_file(fixture_path(dump(side)))));
  }
};

simdjson::dom::element parse(simdjson::dom::parser& parser, const std::string& json) {
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  return doc;
}

TEST_P(SizePoolDumps, FixturesComeFromTheRubyTheyAreNamedFor) {
  EXPECT_EQ(address("ruby"), GetParam().version);
}

TEST_P(SizePoolDumps, AnalyzeCountsEveryObjectAndNoShapeAsAnObject) {
  const testing::ScannedDump scanned = scan('b');
  ASSERT_GT(scanned.shapes, 10u);
  CommandResult r = run_memprof("analyze " + dump('b') + " --json --top 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parse(parser, r.out);
  EXPECT_EQ(uint64_t(doc["total"]["count"]), scanned.objects);
  EXPECT_EQ(uint64_t(doc["total"]["memsize"]), scanned.memsize);
  EXPECT_EQ(uint64_t(doc["bad_lines"]), 0u);
  EXPECT_EQ(uint64_t(doc["shapes"]["count"]), scanned.shapes);
  EXPECT_EQ(uint64_t(doc["shapes"]["memsize"]), scanned.shape_memsize);
  // Every type these Rubies write is one memprof knows, and the types partition the objects.
  uint64_t count = 0;
  for (simdjson::dom::element row : doc["by_type"].get_array()) {
    EXPECT_NE(std::string_view(row["name"]), "UNKNOWN");
    count += uint64_t(row["count"]);
  }
  EXPECT_EQ(count, scanned.objects);
  CommandResult text = run_memprof("analyze " + dump('b') + " --top 1");
  EXPECT_NE(text.out.find("\nshapes: " + std::to_string(scanned.shapes) + ", memsize "),
            std::string::npos) << text.out;
}

TEST_P(SizePoolDumps, AnalyzeGolden) {
  CommandResult r = run_memprof("analyze " + dump('b') + " --top 8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden("analyze_" + name() + "_b.txt", r.out);
}

TEST_P(SizePoolDumps, PathFromGlobalThroughTheChain) {
  CommandResult r = run_memprof("path " + dump('b') + " " + address("chain_tail"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden("path_" + name() + "_chain_tail.txt", r.out);
  EXPECT_TRUE(r.out.starts_with("root global_tbl\n" + address("chain_head") + " OBJECT Chain, 40 bytes"))
      << r.out;
  // The root, the chain's first 2 and last 2 links, and the 296 between collapsed.
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 6);
  EXPECT_NE(r.out.find("\n... 296 more Chain ...\n"), std::string::npos) << r.out;
}

TEST_P(SizePoolDumps, DiffFindsExactlyTheLeakedObjects) {
  CommandResult text = run_memprof("diff " + dump('a') + " " + dump('b') + " --top 10");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  expect_golden("diff_" + name() + ".txt", text.out);

  CommandResult leaky = run_memprof("diff " + dump('a') + " " + dump('b') + " --json --top 0 --class Leaky");
  ASSERT_EQ(leaky.exit_code, 0) << leaky.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parse(parser, leaky.out);
  EXPECT_EQ(uint64_t(doc["new"]["count"]), kLeaks);
  EXPECT_EQ(uint64_t(doc["new"]["memsize"]), kLeaks * 40);
  EXPECT_EQ(uint64_t(doc["undecided"]["count"]), 0u);

  CommandResult strings = run_memprof("diff " + dump('a') + " " + dump('b') +
                                      " --json --top 0 --class String --site make_size_pool_dumps.rb:81");
  ASSERT_EQ(strings.exit_code, 0) << strings.err;
  simdjson::dom::parser parser2;
  EXPECT_EQ(uint64_t(parse(parser2, strings.out)["new"]["count"]), GetParam().payload_strings_found);
}

TEST_P(SizePoolDumps, HeapmapDrawsEverySizePool) {
  TempDir dir;
  const std::string png = dir.file("heap.png");
  CommandResult r = run_memprof("heapmap " + dump('b') + " -o " + png);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_TRUE(r.out.starts_with(png + ": ")) << r.out;
  expect_golden("heapmap_" + name() + "_b.txt", r.out.substr(png.size()));
  // One line per size pool, 40 to 640 bytes, and every object of the dump drawn.
  const uint64_t objects = scan('b').objects;
  EXPECT_NE(r.out.find(" slots, " + count_text(objects) + " objects, "), std::string::npos);
  size_t at = 0;
  for (int slot_size : {40, 80, 160, 320, 640}) {
    at = r.out.find("\n  " + std::to_string(slot_size) + "-byte slots: ", at);
    EXPECT_NE(at, std::string::npos) << slot_size;
  }
}

TEST_P(SizePoolDumps, HtmlPageHasTheTablesAndTheSizePools) {
  TempDir dir;
  const std::string html_path = dir.file("report.html");
  CommandResult r = run_memprof("html " + dump('b') + " -o " + html_path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = read_file(html_path);
  for (const char* table : {"roots", "by-type", "by-class", "by-location", "by-gem", "by-generation",
                            "top-retained", "biggest", "most-referenced", "duplicate-strings",
                            "size-pools"}) {
    EXPECT_NE(html.find("<table id=\"" + std::string(table) + "\">"), std::string::npos) << table;
  }
  EXPECT_NE(html.find("data:image/png;base64,"), std::string::npos);
  // The page's data: the heap map's pools cover every object of the dump.
  const std::string open = "<script type=\"application/json\" id=\"report-data\">";
  const size_t begin = html.find(open);
  ASSERT_NE(begin, std::string::npos);
  const size_t end = html.find("</script>", begin);
  simdjson::dom::parser parser;
  simdjson::dom::element report = parse(parser, html.substr(begin + open.size(), end - begin - open.size()));
  std::vector<uint64_t> slot_sizes;
  uint64_t objects = 0;
  for (simdjson::dom::element pool : report["heapmap"]["pools"].get_array()) {
    slot_sizes.push_back(uint64_t(pool["slot_size"]));
    objects += uint64_t(pool["objects"]);
  }
  EXPECT_EQ(slot_sizes, (std::vector<uint64_t>{40, 80, 160, 320, 640}));
  EXPECT_EQ(objects, scan('b').objects);
}

INSTANTIATE_TEST_SUITE_P(Rubies, SizePoolDumps,
                         ::testing::Values(SizePoolFixture{"ruby33", "3.3.8", 37},
                                           SizePoolFixture{"ruby34", "3.4.5", kLeaks}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace memprof::heap
