// `memprof heapmap` end to end on a hand-made dump whose every slot is known
// (fixtures/small_heap.json: one 64 KiB page at 0x7f1200000000, first slot 40 bytes in, objects in
// slots 0-5, 7-10, 408 and 409; slot 7 pinned; slot 408 sits where a 16 KiB page would keep
// its malloc reserve, which rules out the Ruby 2.x-3.0 layout).
#include <gtest/gtest.h>
#include <unistd.h>

#include "support/command_runner.h"
#include "png_decode.h"
#include "report/bitmap_font.h"
#include "report/heap_map_renderer.h"

namespace memprof::report {
namespace {

using testing::decode_png_file;
using memprof::testing::run_command;
using memprof::testing::TempDir;

const std::string kMemprof = MEMPROF_BINARY;
const std::string kFixture = std::string(FIXTURE_DIR) + "/small_heap.json";

// The one page's column: 12-pixel margin, 14-pixel column (1 page), 3-pixel pinned notch; one
// pixel row per 40-byte slot, under the size pool's label, slot 0 one row below the top of the
// page (the header's 40 bytes).
constexpr int kColumnX = 12, kNotch = 3;
constexpr int kPageTop = 12 + MapRaster::kLabelHeight;
int row_of(int slot) { return kPageTop + 1 + slot; }

constexpr Rgb kArray{255, 127, 14}, kString{31, 119, 180}, kHash{44, 160, 44},
    kObject{214, 39, 40}, kClass{227, 119, 194}, kModule{188, 189, 34};

TEST(HeapmapCli, DrawsEachSlotOfTheFixtureByType) {
  TempDir dir;
  const std::string png = dir.file("heap.png");
  const auto run = run_command({kMemprof, "heapmap", kFixture, "-o", png});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  EXPECT_EQ(run.out, png + ": 1 page, 1,637 slots, 12 objects, 1 pinned; Ruby 3.1+ layout (every "
                           "object address fits its 64 KiB pages; 1 object cannot sit in Ruby "
                           "2.x-3.0 pages)\n"
                           "  40-byte slots: 1 page, 1,637 slots, 12 objects\n");

  const auto image = decode_png_file(png);
  ASSERT_EQ(image.error, "");
  const int x = kColumnX + kNotch;  // right of any notch
  const std::vector<std::pair<int, Rgb>> expected = {
      {0, kArray},  {1, kString},  {2, kString},  {3, kHash},   {4, kString},
      {5, kObject}, {6, map_colors::kEmptySlot},  {7, kString}, {8, kClass},
      {9, kString}, {10, kString}, {11, map_colors::kEmptySlot}, {407, map_colors::kEmptySlot},
      {408, kModule}, {409, kString}, {1636, map_colors::kEmptySlot}};
  for (const auto& [slot, color] : expected) {
    EXPECT_EQ(image.at(x, row_of(slot)), color) << "slot " << slot;
    EXPECT_EQ(image.at(kColumnX + 13, row_of(slot)), color) << "slot " << slot;
  }
  // Only slot 7 carries the pinned notch.
  EXPECT_EQ(image.at(kColumnX, row_of(7)), map_colors::kPinnedNotch);
  EXPECT_EQ(image.at(kColumnX + kNotch - 1, row_of(7)), map_colors::kPinnedNotch);
  EXPECT_EQ(image.at(kColumnX, row_of(5)), kObject);
  // The page header above slot 0 and the rows below the last slot are background, as is the
  // one-pixel gap right of the column.
  EXPECT_EQ(image.at(x, row_of(-1)), map_colors::kBackground);
  EXPECT_EQ(image.at(x, row_of(1637)), map_colors::kBackground);
  EXPECT_EQ(image.at(kColumnX + 14, row_of(0)), map_colors::kBackground);
}

TEST(HeapmapCli, ColorsByGeneration) {
  TempDir dir;
  const std::string png = dir.file("gen.png");
  const auto run = run_command({kMemprof, "heapmap", kFixture, "-o", png, "--by", "generation"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto image = decode_png_file(png);
  ASSERT_EQ(image.error, "");
  // Generations 5 (slots 0, 1) and 7 (slot 3) are the oldest and youngest of the dump.
  const Rgb oldest{49, 54, 149}, youngest{215, 48, 39}, none{150, 150, 150};
  EXPECT_EQ(image.at(kColumnX + kNotch, row_of(0)), oldest);
  EXPECT_EQ(image.at(kColumnX + kNotch, row_of(1)), oldest);
  EXPECT_EQ(image.at(kColumnX + kNotch, row_of(3)), youngest);
  EXPECT_EQ(image.at(kColumnX + kNotch, row_of(2)), none);
  EXPECT_EQ(image.at(kColumnX + kNotch, row_of(6)), map_colors::kEmptySlot);
  EXPECT_EQ(run.err, "") << "the fixture has generations";
}

// A dump without generations (written without allocation tracing) colored by generation is all
// "none": said, rather than a grey picture without a word.
TEST(HeapmapCli, ColoringByGenerationADumpWithoutGenerationsSaysSo) {
  TempDir dir;
  std::string text = memprof::testing::read_file(kFixture);
  for (size_t at; (at = text.find("\"generation\":")) != std::string::npos;)
    text.replace(at, text.find_first_of(",}", at) - at, "\"generation_was\":0");
  const std::string dump = dir.file("nogen.json");
  memprof::testing::write_file(dump, text);
  const auto run = run_command({kMemprof, "heapmap", dump, "-o", dir.file("gen.png"), "--by", "generation"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "memprof: warning: " + dump + ": no object has a generation (the dump was written without "
                     "ObjectSpace.trace_object_allocations): every cell is colored as \"none\"\n");
}

TEST(HeapmapCli, ForcedOldLayoutSplitsThePageAndReportsWhatItCannotPlace) {
  TempDir dir;
  const std::string png = dir.file("old.png");
  const auto run = run_command({kMemprof, "heapmap", kFixture, "-o", png, "--ruby-version", "2.7"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, png + ": 2 pages, 815 slots, 11 objects, 1 pinned; Ruby 2.x-3.0 layout "
                           "(Ruby 2.x-3.0 layout requested)\n"
                           "  40-byte slots: 2 pages, 815 slots, 11 objects\n");
  EXPECT_EQ(run.err,
            "memprof: warning: objects not drawn (no free slot in the Ruby 2.x-3.0 layout): 1\n");
}

struct BadInput {
  std::vector<std::string> args;
  std::string message;
};

TEST(HeapmapCli, BadInputIsOneLineAndExitOne) {
  TempDir dir;
  const std::string png = dir.file("x.png");
  const std::vector<BadInput> cases = {
      {{"heapmap", "/nonexistent/dump.json", "-o", png},
       "memprof: /nonexistent/dump.json: No such file or directory\n"},
      {{"heapmap", kFixture, "-o", "/nonexistent-dir/heap.png"},
       "memprof: cannot write /nonexistent-dir/heap.png: No such file or directory\n"},
      {{"heapmap", kFixture, "-o", dir.path()},
       "memprof: cannot write " + dir.path() + ": Is a directory\n"},
      {{"heapmap", kFixture, "-o", png, "--by", "color"},
       "memprof: --by must be 'type' or 'generation', not 'color'\n"},
      {{"heapmap", kFixture, "-o", png, "--ruby-version", "x"},
       "memprof: invalid Ruby version 'x' (expected MAJOR.MINOR, e.g. 3.1)\n"},
      {{"html", "/nonexistent/dump.json", "-o", dir.file("r.html")},
       "memprof: /nonexistent/dump.json: No such file or directory\n"},
      {{"html", kFixture, "-o", "/nonexistent-dir/report.html"},
       "memprof: cannot write /nonexistent-dir/report.html: No such file or directory\n"},
      {{"html", kFixture, "-o", dir.file("r.html"), "--by", "age"},
       "memprof: --by must be 'type' or 'generation', not 'age'\n"},
  };
  for (const BadInput& c : cases) {
    std::vector<std::string> argv = {kMemprof};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const auto run = run_command(argv);
    EXPECT_EQ(run.exit_code, 1) << c.message;
    EXPECT_EQ(run.err, c.message);
    EXPECT_EQ(run.out, "");
  }
}

// `-o` naming the dump itself, by any path, is refused before anything is written: the dump
// stays byte for byte what it was.
TEST(HeapmapCli, RefusesToOverwriteTheDump) {
  TempDir dir;
  const std::string dump = dir.file("x.json");
  const std::string original = memprof::testing::read_file(kFixture);
  memprof::testing::write_file(dump, original);
  ASSERT_EQ(::link(dump.c_str(), dir.file("hard.json").c_str()), 0);
  ASSERT_EQ(::symlink(dump.c_str(), dir.file("soft.json").c_str()), 0);
  const std::vector<std::pair<std::string, std::string>> outputs = {
      {dump, dump}, {dir.path() + "/./x.json", dump}, {dir.file("hard.json"), dump},
      {dir.file("soft.json"), dump}};
  for (const std::string command : {"heapmap", "html"}) {
    for (const auto& [output, input] : outputs) {
      const auto run = run_command({kMemprof, command, dump, "-o", output});
      EXPECT_EQ(run.exit_code, 1) << command << " -o " << output;
      EXPECT_EQ(run.err, "memprof: refusing to write " + output + ": it is the input " + input + "\n");
      EXPECT_EQ(memprof::testing::read_file(dump), original);
    }
  }
}

// The output is written to a temporary file and renamed into place: a file that another hard
// link of the output path names keeps its bytes, and no temporary file is left behind.
TEST(HeapmapCli, ReplacesTheOutputThroughARename) {
  TempDir dir;
  const std::string png = dir.file("heap.png");
  const std::string other = dir.file("other-link.png");
  memprof::testing::write_file(png, "old bytes");
  ASSERT_EQ(::link(png.c_str(), other.c_str()), 0);
  const auto run = run_command({kMemprof, "heapmap", kFixture, "-o", png});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(memprof::testing::read_file(other), "old bytes");
  EXPECT_EQ(decode_png_file(png).error, "");
  const auto listing = run_command({"/bin/ls", "-A", dir.path()});
  EXPECT_EQ(listing.out, "heap.png\nother-link.png\n");
}

// A picture written to standard output (-o -, -o /dev/stdout) is the whole output: the summary
// goes to stderr. It went to stdout too, after or before the PNG, and the file was no PNG.
TEST(HeapmapCli, APictureOnStdoutIsTheWholeOutput) {
  TempDir dir;
  for (const std::string output : {"-", "/dev/stdout"}) {
    SCOPED_TRACE(output);
    const auto run = run_command({kMemprof, "heapmap", kFixture, "-o", output});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_TRUE(run.err.starts_with(output + ": 1 page, 1,637 slots, 12 objects, 1 pinned;")) << run.err;
    const std::string png = dir.file("stdout.png");
    memprof::testing::write_file(png, run.out);
    EXPECT_EQ(decode_png_file(png).error, "");
  }
}

// A Ruby 3.3-style dump (SHAPE line, "slot_size" fields): a page of 40-byte slots and one of
// 160-byte slots whose first slot is moved to base slot 4 by gc.c's alignment rule. Each is
// drawn in its size pool's section, the 160-byte one right of the 40-byte one's label.
TEST(HeapmapCli, VariableWidthPagesHaveTallerCells) {
  TempDir dir;
  const std::string png = dir.file("vw.png");
  const auto run = run_command(
      {kMemprof, "heapmap", std::string(FIXTURE_DIR) + "/variable_width_heap.json", "-o", png});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, png + ": 2 pages, 2,045 slots, 4 objects, 1 pinned; Ruby 3.1+ layout "
                           "(objects carry slot_size, written by Ruby 3.2 and later)\n"
                           "  40-byte slots: 1 page, 1,637 slots, 2 objects\n"
                           "  160-byte slots: 1 page, 408 slots, 2 objects\n");
  const auto image = decode_png_file(png);
  ASSERT_EQ(image.error, "");
  // Page 0 (40-byte slots, first slot 24 bytes in): one row per slot from the top.
  EXPECT_EQ(image.at(kColumnX + kNotch, kPageTop), kString);
  EXPECT_EQ(image.at(kColumnX + kNotch, kPageTop + 1), kArray);
  EXPECT_EQ(image.at(kColumnX + kNotch, kPageTop + 2), map_colors::kEmptySlot);
  // Right of it only background up to the second section (its label is wider than the column).
  const int section_x =
      kColumnX + text_width("40-BYTE SLOTS", MapRaster::kLabelScale) + MapRaster::kSectionGap;
  for (int x = kColumnX + 14; x < section_x; ++x) {
    EXPECT_EQ(image.at(x, kPageTop + 1), map_colors::kBackground) << x;
  }
  // Page 1 (160-byte slots, first slot 160 bytes in): 4 rows per slot, the last a separator.
  const int x = section_x + kNotch;
  for (int y = kPageTop; y < kPageTop + 4; ++y) EXPECT_EQ(image.at(x, y), map_colors::kBackground) << y;
  for (int y = kPageTop + 4; y < kPageTop + 7; ++y) EXPECT_EQ(image.at(x, y), kHash) << y;
  EXPECT_EQ(image.at(x, kPageTop + 7), map_colors::kBackground);
  for (int y = kPageTop + 8; y < kPageTop + 11; ++y) EXPECT_EQ(image.at(x, y), map_colors::kEmptySlot) << y;
  for (int y = kPageTop + 12; y < kPageTop + 15; ++y) EXPECT_EQ(image.at(x, y), kObject) << y;
  EXPECT_EQ(image.at(section_x, kPageTop + 12), map_colors::kPinnedNotch);
  // 408 slots of 4 rows from page row 4: the last ends at row 4 + 1632 - 1.
  EXPECT_EQ(image.at(x, kPageTop + 4 + 407 * 4), map_colors::kEmptySlot);
  EXPECT_EQ(image.at(x, kPageTop + 4 + 408 * 4), map_colors::kBackground);
  // Each section's label is drawn above it, in the text color.
  auto has_text = [&](int left, int right) {
    for (int y = 12; y < kPageTop; ++y) {
      for (int px = left; px < right; ++px) {
        if (image.at(px, y) == map_colors::kText) return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(has_text(kColumnX, section_x - MapRaster::kSectionGap));
  EXPECT_TRUE(has_text(section_x, section_x + 40));
}

}  // namespace
}  // namespace memprof::report
