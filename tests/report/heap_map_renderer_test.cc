// A page map built from synthetic objects, drawn and read back pixel by pixel through PNG.
#include "report/heap_map_renderer.h"

#include <gtest/gtest.h>

#include "png_decode.h"
#include "report/bitmap_font.h"
#include "report/png_encoder.h"

namespace memprof::report {
namespace {

const HeapLayout& ruby31() { return **layout_for_ruby_version("3.1"); }
const HeapLayout& ruby33() { return **layout_for_ruby_version("3.3"); }

// The first row of the first size pool's pages: below the margin and the pool's label.
constexpr int kTop = MapRaster::kMargin + MapRaster::kLabelHeight;

constexpr Rgb kRed{200, 0, 0};
constexpr Rgb kBlue{0, 0, 200};

MapLegend two_categories() {
  MapLegend legend;
  legend.title = "TEST";
  legend.categories = {{"RED", kRed, 2}, {"BLUE", kBlue, 1}};
  return legend;
}

TEST(HeapPageMap, PlacesObjectsIntoPagesInAddressOrder) {
  const uint64_t low = 0x20000, high = 0x50000;
  const std::vector<MapObject> objects = {
      {high + 40 + 3 * 40, 0, 1, false},  // page `high` slot 3 (first slot at +40)
      {low + 8, 0, 0, true},              // page `low` slot 0, pinned
      {low + 8 + 2 * 40, 0, 0, false},    // page `low` slot 2
      {low + 8 + 2 * 40, 0, 1, false},    // same slot again: a conflict
      {low + 12, 0, 0, false},            // between slots: a misfit
  };
  const HeapPageMap map = HeapPageMap::build(ruby31(), objects);
  ASSERT_EQ(map.pages.size(), 2u);
  EXPECT_EQ(map.pages[0].slots.body, low);
  EXPECT_EQ(map.pages[0].slots.slot_count, 1638u);
  EXPECT_EQ(map.pages[0].used, 2u);
  EXPECT_EQ(map.pages[1].slots.body, high);
  EXPECT_EQ(map.pages[1].slots.slot_count, 1637u);
  EXPECT_EQ(map.slot_count(), 1638u + 1637u);
  EXPECT_EQ(map.placed, 3u);
  EXPECT_EQ(map.misfits, 1u);
  EXPECT_EQ(map.conflicts, 1u);
  EXPECT_EQ(map.cell(map.pages[0], 0).category, 0);
  EXPECT_TRUE(map.cell(map.pages[0], 0).pinned);
  EXPECT_EQ(map.cell(map.pages[0], 1).category, kEmptySlot);
  EXPECT_EQ(map.cell(map.pages[0], 2).category, 0);
  EXPECT_EQ(map.cell(map.pages[1], 3).category, 1);
}

TEST(HeapPageMap, GroupsPagesBySizePool) {
  // Pages of 40, 160 and 40-byte slots at rising addresses: the two 40-byte pages come first,
  // in address order, then the 160-byte one, whatever the address order across pools.
  const uint64_t a = 0x20000, b = 0x30000, c = 0x40000;
  const std::vector<MapObject> objects = {
      {page_slots(ruby33(), a, 40).first_slot, 40, 0, false},
      {page_slots(ruby33(), b, 160).first_slot + 160, 160, 1, false},
      {page_slots(ruby33(), b, 160).first_slot, 160, 1, false},
      {page_slots(ruby33(), c, 40).first_slot + 40, 40, 0, false},
  };
  const HeapPageMap map = HeapPageMap::build(ruby33(), objects);
  ASSERT_EQ(map.pages.size(), 3u);
  EXPECT_EQ(map.pages[0].slots.body, a);
  EXPECT_EQ(map.pages[1].slots.body, c);
  EXPECT_EQ(map.pages[2].slots.body, b);
  ASSERT_EQ(map.pools.size(), 2u);
  EXPECT_EQ(map.pools[0].slot_size, 40u);
  EXPECT_EQ(map.pools[0].first_page, 0u);
  EXPECT_EQ(map.pools[0].page_count, 2u);
  EXPECT_EQ(map.pools[0].slots, map.pages[0].slots.slot_count + map.pages[1].slots.slot_count);
  EXPECT_EQ(map.pools[0].used, 2u);
  EXPECT_EQ(map.pools[1].slot_size, 160u);
  EXPECT_EQ(map.pools[1].first_page, 2u);
  EXPECT_EQ(map.pools[1].page_count, 1u);
  EXPECT_EQ(map.pools[1].slots, 409u);  // (65536 - 160) / 160: first slot at base slot 4
  EXPECT_EQ(map.pools[1].used, 2u);
  EXPECT_EQ(map.pages[2].pool, 1u);
  EXPECT_EQ(map.cell(map.pages[2], 0).category, 1);
  EXPECT_EQ(map.cell(map.pages[1], 1).category, 0);
}

TEST(HeapMapRenderer, DrawsEachSizePoolInALabelledSectionOfItsOwn) {
  // One page of 40-byte slots and one of 320-byte slots: two sections side by side, each with
  // its label above it; the second starts right of the first one's label (wider than a column).
  // 0x50000 is a multiple of 40, so the 320-byte page's first slot moves to byte 320.
  const uint64_t a = 0x20000, b = 0x50000;
  const std::vector<MapObject> objects = {{page_slots(ruby33(), a, 40).first_slot, 40, 0, false},
                                          {page_slots(ruby33(), b, 320).first_slot, 320, 1, false}};
  const HeapPageMap map = HeapPageMap::build(ruby33(), objects);
  const MapRaster raster = MapRaster::plan(map);
  ASSERT_EQ(raster.sections.size(), 2u);
  EXPECT_EQ(section_label(map.pools[0]), "40-BYTE SLOTS");
  EXPECT_EQ(section_label(map.pools[1]), "320-BYTE SLOTS");
  const int label_width = text_width("40-BYTE SLOTS", MapRaster::kLabelScale);
  EXPECT_EQ(raster.sections[0].x, 0);
  EXPECT_EQ(raster.sections[0].width, label_width);
  EXPECT_EQ(raster.sections[1].x, label_width + MapRaster::kSectionGap);
  EXPECT_EQ(raster.sections[1].y, 0);
  EXPECT_EQ(raster.map_width, raster.sections[1].x + text_width("320-BYTE SLOTS", MapRaster::kLabelScale));
  EXPECT_EQ(raster.map_height, MapRaster::kLabelHeight + 1638);

  const Image image = render_heap_map(map, two_categories());
  const PixelRect small = raster.slot_rect(map, 0, 0);
  const PixelRect large = raster.slot_rect(map, 1, 0);
  EXPECT_EQ(small.x, MapRaster::kMargin);
  EXPECT_EQ(large.x, MapRaster::kMargin + raster.sections[1].x);
  EXPECT_EQ(large.y, kTop + 8);  // first 320-byte slot at byte 320 of the page (base slot 8)
  EXPECT_EQ(large.h, 7);
  EXPECT_EQ(image.at(small.x + 5, small.y), kRed);
  EXPECT_EQ(image.at(large.x + 5, large.y), kBlue);
  // The labels: text-colored pixels above each section, none above the gap between them.
  auto text_pixels = [&](int left, int right) {
    int n = 0;
    for (int y = MapRaster::kMargin; y < kTop; ++y) {
      for (int x = left; x < right; ++x) n += image.at(x, y) == map_colors::kText;
    }
    return n;
  };
  EXPECT_GT(text_pixels(MapRaster::kMargin, MapRaster::kMargin + label_width), 50);
  EXPECT_EQ(text_pixels(MapRaster::kMargin + label_width, large.x), 0);
  EXPECT_GT(text_pixels(large.x, large.x + label_width), 50);
}

TEST(HeapMapRenderer, ASectionTooWideForTheRowStartsTheNextRow) {
  // 500 pages of 40-byte slots fill the 1600-pixel row (3-pixel columns); the one 80-byte page
  // goes below them.
  std::vector<MapObject> objects;
  for (uint64_t p = 1; p <= 500; ++p) {
    objects.push_back({page_slots(ruby33(), p * 0x10000, 40).first_slot, 40, 0, false});
  }
  objects.push_back({page_slots(ruby33(), 600 * 0x10000, 80).first_slot, 80, 1, false});
  const HeapPageMap map = HeapPageMap::build(ruby33(), objects);
  const MapRaster raster = MapRaster::plan(map);
  ASSERT_EQ(raster.sections.size(), 2u);
  EXPECT_EQ(raster.sections[0].bands, 2);
  EXPECT_EQ(raster.sections[0].width, 1600);
  const int first_height = MapRaster::kLabelHeight + 2 * 1638 + MapRaster::kBandGap;
  EXPECT_EQ(raster.sections[0].height, first_height);
  EXPECT_EQ(raster.sections[1].x, 0);
  EXPECT_EQ(raster.sections[1].y, first_height + MapRaster::kSectionGap);
  EXPECT_EQ(raster.map_height, raster.sections[1].y + MapRaster::kLabelHeight + 1638);
  const PixelRect r = raster.slot_rect(map, 500, 0);
  EXPECT_EQ(r.x, MapRaster::kMargin);
  EXPECT_EQ(r.y, MapRaster::kMargin + raster.sections[1].y + MapRaster::kLabelHeight +
                     static_cast<int>(page_slots(ruby33(), 600 * 0x10000, 80).first_slot % 0x10000 / 40));
}

TEST(HeapMapRenderer, DrawsEverySlotInItsCategoryColor) {
  const uint64_t low = 0x20000, high = 0x50000;
  const std::vector<MapObject> objects = {
      {low + 8, 0, 0, true}, {low + 8 + 2 * 40, 0, 0, false}, {high + 40 + 3 * 40, 0, 1, false}};
  const HeapPageMap map = HeapPageMap::build(ruby31(), objects);
  const Image image = render_heap_map(map, two_categories());
  const MapRaster raster = MapRaster::plan(map);
  EXPECT_EQ(raster.unit, 1);
  EXPECT_EQ(raster.band_height, 1638);
  EXPECT_EQ(raster.column_width, 14);  // 2 pages: as wide as allowed

  auto png = encode_png(image);
  ASSERT_TRUE(png);
  const auto decoded = testing::decode_png(*png);
  ASSERT_EQ(decoded.error, "");
  ASSERT_EQ(decoded.width, image.width());

  const PixelRect pinned = raster.slot_rect(map, 0, 0);
  EXPECT_EQ(pinned.x, MapRaster::kMargin);
  EXPECT_EQ(pinned.y, kTop + 0);  // (8 / 40) base slots down: row 0
  EXPECT_EQ(raster.notch_width(), 3);
  EXPECT_EQ(decoded.at(pinned.x, pinned.y), map_colors::kPinnedNotch);
  EXPECT_EQ(decoded.at(pinned.x + 2, pinned.y), map_colors::kPinnedNotch);
  EXPECT_EQ(decoded.at(pinned.x + 3, pinned.y), kRed);
  const PixelRect empty = raster.slot_rect(map, 0, 1);
  EXPECT_EQ(empty.y, kTop + 1);
  EXPECT_EQ(decoded.at(empty.x, empty.y), map_colors::kEmptySlot);
  EXPECT_EQ(decoded.at(empty.x + 5, empty.y), map_colors::kEmptySlot);
  const PixelRect red = raster.slot_rect(map, 0, 2);
  EXPECT_EQ(decoded.at(red.x, red.y), kRed);
  const PixelRect blue = raster.slot_rect(map, 1, 3);
  EXPECT_EQ(blue.x, MapRaster::kMargin + 15);
  EXPECT_EQ(blue.y, kTop + 4);  // (40 + 3 * 40) / 40
  EXPECT_EQ(decoded.at(blue.x, blue.y), kBlue);
  EXPECT_EQ(decoded.at(blue.x + 13, blue.y), kBlue);
  // The gap between the two columns is background.
  EXPECT_EQ(decoded.at(MapRaster::kMargin + 14, red.y), map_colors::kBackground);
  // Page 1's first slot starts 40 bytes in: its first row (the header) stays background and its
  // 1637 slots fill rows 1 to 1637.
  EXPECT_EQ(decoded.at(blue.x, kTop + 0), map_colors::kBackground);
  EXPECT_EQ(decoded.at(blue.x, kTop + 1), map_colors::kEmptySlot);
  EXPECT_EQ(decoded.at(blue.x, kTop + 1637), map_colors::kEmptySlot);
  EXPECT_EQ(decoded.at(blue.x, kTop + 1638), map_colors::kBackground);
}

TEST(HeapMapRenderer, TallSlotsKeepASeparatorRow) {
  // A 3.3 page of 320-byte slots: each cell is 8 base units tall, drawn 7 + 1 separator.
  const uint64_t body = 0x20000;
  const std::vector<MapObject> objects = {{body + 8 + 320, 320, 0, false}};
  const HeapPageMap map = HeapPageMap::build(ruby33(), objects);
  ASSERT_EQ(map.pages.size(), 1u);
  EXPECT_EQ(map.pages[0].slots.slot_count, 204u);  // (65536 - 8) / 320
  const MapRaster raster = MapRaster::plan(map);
  const PixelRect cell = raster.slot_rect(map, 0, 1);
  EXPECT_EQ(cell.y, kTop + 8);  // (8 + 320) / 40
  EXPECT_EQ(cell.h, 7);
  const Image image = render_heap_map(map, two_categories());
  EXPECT_EQ(image.at(cell.x + 2, cell.y + 6), kRed);
  EXPECT_EQ(image.at(cell.x + 2, cell.y + 7), map_colors::kBackground);
  EXPECT_EQ(image.at(cell.x + 2, cell.y + 8), map_colors::kEmptySlot);
}

TEST(HeapMapRenderer, WrapsManyPagesIntoBands) {
  std::vector<MapObject> objects;
  for (uint64_t p = 1; p <= 500; ++p) {
    objects.push_back({page_slots(ruby31(), p * 0x10000, 40).first_slot, 0, 0, false});
  }
  const HeapPageMap map = HeapPageMap::build(ruby31(), objects);
  ASSERT_EQ(map.pages.size(), 500u);
  const MapRaster raster = MapRaster::plan(map);
  EXPECT_EQ(raster.column_width, 3);
  EXPECT_EQ(raster.columns_per_band, 400);  // 1600 / (3 + 1)
  EXPECT_EQ(raster.map_width, 1600);
  EXPECT_EQ(raster.map_height, MapRaster::kLabelHeight + 2 * 1638 + MapRaster::kBandGap);
  // Page 451 (body 452 * 64 KiB) is column 51 of the second band; its body + 8 is a multiple of
  // 40 (452 * 65536 + 8 = 40 * 740557), so slot 0 is in the first row.
  const PixelRect r = raster.slot_rect(map, 451, 0);
  EXPECT_EQ(r.x, MapRaster::kMargin + 51 * 4);
  EXPECT_EQ(r.y, kTop + 1638 + MapRaster::kBandGap);
}

}  // namespace
}  // namespace memprof::report
