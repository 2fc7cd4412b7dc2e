// The heap map and the HTML page of a dump written by the real ruby (fixtures/make_heap_dump.rb):
// every object of the dump must appear in its slot in its type's color, pinned ones with the
// notch, and nothing else may be drawn as occupied.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "browser.h"
#include "support/command_runner.h"
#include "heap/loader.h"
#include "heap/units.h"
#include "png_decode.h"
#include "report/heap_map_coloring.h"
#include "report/heap_page_map.h"

namespace memprof::report {
namespace {

using memprof::testing::run_command;
using memprof::testing::TempDir;

const std::string kMemprof = MEMPROF_BINARY;

class RubyDump : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const auto run = run_command(
        {"ruby", std::string(FIXTURE_DIR) + "/make_heap_dump.rb", dir_->file("dump.json")});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    ruby_version_ = run.out;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string dump() { return dir_->file("dump.json"); }

  static TempDir* dir_;
  static std::string ruby_version_;
};
TempDir* RubyDump::dir_ = nullptr;
std::string RubyDump::ruby_version_;

TEST_F(RubyDump, EveryObjectIsInItsSlotInItsColor) {
  const std::string png = dir_->file("heap.png");
  const auto run = run_command({kMemprof, "heapmap", dump(), "-o", png});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");

  auto heap = heap::load_heap(dump());
  ASSERT_TRUE(heap) << heap.message();
  ASSERT_GT(heap->size(), 20000u);
  // Debian's ruby is 3.1: 64 KiB pages, derived from the addresses alone.
  const HeapLayout& layout = **layout_for_ruby_version(ruby_version_);
  std::map<uint64_t, size_t> page_index;  // page body -> index in the map's pages
  uint64_t pinned = 0;
  for (size_t id = 0; id < heap->size(); ++id) {
    auto slot = locate_slot(layout, heap->address[id], heap->slot_size[id]);
    ASSERT_TRUE(slot) << std::hex << heap->address[id];
    page_index.emplace(slot->body, 0);
    pinned += (heap->flags[id] & heap::kFlagPinned) != 0;
  }
  EXPECT_GT(pinned, 0u) << "GC.compact should have left pinned objects";
  EXPECT_TRUE(run.out.starts_with(png + ": " + heap::count_text(page_index.size()) +
                                  (page_index.size() == 1 ? " page, " : " pages, ")))
      << run.out;
  EXPECT_NE(run.out.find(", " + heap::count_text(heap->size()) + " objects, " +
                         heap::count_text(pinned) + " pinned; " + std::string(layout.name)),
            std::string::npos)
      << run.out;

  const auto image = testing::decode_png_file(png);
  ASSERT_EQ(image.error, "");
  // Pixel positions from the page list alone (slots from geometry).
  std::vector<MapObject> all;
  for (size_t id = 0; id < heap->size(); ++id) all.push_back({heap->address[id], heap->slot_size[id], 0, false});
  const HeapPageMap map = HeapPageMap::build(layout, all);
  ASSERT_EQ(map.pages.size(), page_index.size());
  // Columns follow the map's page order (by size pool, then address).
  for (size_t p = 0; p < map.pages.size(); ++p) page_index.at(map.pages[p].slots.body) = p;
  const MapRaster raster = MapRaster::plan(map);
  const int notch = raster.notch_width();

  size_t wrong = 0;
  for (size_t id = 0; id < heap->size() && wrong < 10; ++id) {
    const auto slot = *locate_slot(layout, heap->address[id], heap->slot_size[id]);
    const PixelRect r = raster.slot_rect(map, page_index.at(slot.body), slot.index);
    const Rgb expected = type_color(heap->type[id]);
    const bool is_pinned = (heap->flags[id] & heap::kFlagPinned) != 0;
    if (image.at(r.x + notch, r.y) != expected ||
        (image.at(r.x, r.y) == map_colors::kPinnedNotch) != is_pinned) {
      ADD_FAILURE() << "object " << std::hex << heap->address[id] << " drawn wrong";
      ++wrong;
    }
  }
  // Every other slot is drawn empty.
  uint64_t occupied = 0, empty = 0;
  for (size_t p = 0; p < map.pages.size(); ++p) {
    for (uint32_t i = 0; i < map.pages[p].slots.slot_count; ++i) {
      const PixelRect r = raster.slot_rect(map, p, i);
      (image.at(r.x + notch, r.y) == map_colors::kEmptySlot ? empty : occupied) += 1;
    }
  }
  EXPECT_EQ(occupied, heap->size());
  EXPECT_EQ(empty, map.slot_count() - heap->size());
}

TEST_F(RubyDump, HtmlPageCountsEveryObjectLine) {
  // Counted from the file itself, independently of memprof's reader.
  const std::string text = memprof::testing::read_file(dump());
  size_t object_lines = 0;
  for (size_t at = text.find("{\"address\":"); at != std::string::npos;
       at = text.find("\n{\"address\":", at + 1)) {
    ++object_lines;
  }
  const std::string html = dir_->file("report.html");
  const auto run = run_command({kMemprof, "html", dump(), "-o", html});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto browser = testing::render_dom(html);
  ASSERT_EQ(browser.exit_code, 0) << browser.err;
  EXPECT_EQ(testing::element_by_id(browser.out, "total-count", "data-value").attribute,
            std::to_string(object_lines));
  EXPECT_EQ(testing::element_by_id(browser.out, "consistency", "id").text, "");
  EXPECT_NE(browser.out.find("data-rendered=\"yes\""), std::string::npos);
}

}  // namespace
}  // namespace memprof::report
