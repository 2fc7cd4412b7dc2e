// A page map built from synthetic objects, drawn and read back pixel by pixel through PNG.
#include "report/heap_map_renderer.h"

#include <gtest/gtest.h>

#include "png_decode.h"
#include "report/png_encoder.h"

namespace memprof::report {
namespace {

const HeapLayout& ruby31() { return **layout_for_ruby_version("3.1"); }
const HeapLayout& ruby33() { return **layout_for_ruby_version("3.3"); }

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
  EXPECT_EQ(pinned.y, MapRaster::kMargin + 0);  // (8 / 40) base slots down: row 0
  EXPECT_EQ(raster.notch_width(), 3);
  EXPECT_EQ(decoded.at(pinned.x, pinned.y), map_colors::kPinnedNotch);
  EXPECT_EQ(decoded.at(pinned.x + 2, pinned.y), map_colors::kPinnedNotch);
  EXPECT_EQ(decoded.at(pinned.x + 3, pinned.y), kRed);
  const PixelRect empty = raster.slot_rect(map, 0, 1);
  EXPECT_EQ(empty.y, MapRaster::kMargin + 1);
  EXPECT_EQ(decoded.at(empty.x, empty.y), map_colors::kEmptySlot);
  EXPECT_EQ(decoded.at(empty.x + 5, empty.y), map_colors::kEmptySlot);
  const PixelRect red = raster.slot_rect(map, 0, 2);
  EXPECT_EQ(decoded.at(red.x, red.y), kRed);
  const PixelRect blue = raster.slot_rect(map, 1, 3);
  EXPECT_EQ(blue.x, MapRaster::kMargin + 15);
  EXPECT_EQ(blue.y, MapRaster::kMargin + 4);  // (40 + 3 * 40) / 40
  EXPECT_EQ(decoded.at(blue.x, blue.y), kBlue);
  EXPECT_EQ(decoded.at(blue.x + 13, blue.y), kBlue);
  // The gap between the two columns is background.
  EXPECT_EQ(decoded.at(MapRaster::kMargin + 14, red.y), map_colors::kBackground);
  // Page 1's first slot starts 40 bytes in: its first row (the header) stays background and its
  // 1637 slots fill rows 1 to 1637.
  EXPECT_EQ(decoded.at(blue.x, MapRaster::kMargin + 0), map_colors::kBackground);
  EXPECT_EQ(decoded.at(blue.x, MapRaster::kMargin + 1), map_colors::kEmptySlot);
  EXPECT_EQ(decoded.at(blue.x, MapRaster::kMargin + 1637), map_colors::kEmptySlot);
  EXPECT_EQ(decoded.at(blue.x, MapRaster::kMargin + 1638), map_colors::kBackground);
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
  EXPECT_EQ(cell.y, MapRaster::kMargin + 8);  // (8 + 320) / 40
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
  EXPECT_EQ(raster.map_height, 2 * 1638 + MapRaster::kBandGap);
  // Page 451 (body 452 * 64 KiB) is column 51 of the second band; its body + 8 is a multiple of
  // 40 (452 * 65536 + 8 = 40 * 740557), so slot 0 is in the first row.
  const PixelRect r = raster.slot_rect(map, 451, 0);
  EXPECT_EQ(r.x, MapRaster::kMargin + 51 * 4);
  EXPECT_EQ(r.y, MapRaster::kMargin + 1638 + MapRaster::kBandGap);
}

}  // namespace
}  // namespace memprof::report
