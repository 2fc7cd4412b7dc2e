// The heap map of dumps written by Ruby 3.3 and 3.4 (tests/heap/fixtures/make_size_pool_dumps.rb):
// pages in five size pools, each drawn in a section of its own. Pins the pages and slots of each
// pool, the slots of every page, the picture's size and a digest of the map's pixels.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "heap/loader.h"
#include "report/heap_map.h"
#include "report/heap_map_coloring.h"
#include "report/heap_map_renderer.h"
#include "report/heap_page_map.h"

namespace memprof::report {
namespace {

struct ExpectedMap {
  std::string dump;  // in tests/heap/fixtures
  std::vector<SizePoolSummary> pools;
  int width = 0, height = 0;
  uint64_t map_digest = 0;  // FNV-1a of the pixels left of the legend
};

void PrintTo(const ExpectedMap& expected, std::ostream* out) { *out << expected.dump; }

uint64_t digest_of_columns(const Image& image, int width) {
  uint64_t hash = 14695981039346656037ull;
  for (int y = 0; y < image.height(); ++y) {
    const uint8_t* row = image.row(y);
    for (int i = 0; i < width * 3; ++i) hash = (hash ^ row[i]) * 1099511628211ull;
  }
  return hash;
}

class SizePoolMap : public ::testing::TestWithParam<ExpectedMap> {
 protected:
  static heap::Heap load(const std::string& dump) {
    auto heap = heap::load_heap(std::string(HEAP_FIXTURE_DIR) + "/" + dump);
    EXPECT_TRUE(heap) << heap.message();
    return heap ? std::move(heap).value() : heap::Heap{};
  }
};

TEST_P(SizePoolMap, EveryPoolHasItsPagesAndEveryPageItsSlots) {
  const heap::Heap heap = load(GetParam().dump);
  std::vector<MapObject> objects;
  for (size_t id = 0; id < heap.size(); ++id) objects.push_back({heap.address[id], heap.slot_size[id], 0, false});
  const HeapLayout& layout = **layout_for_ruby_version("3.3");
  const HeapPageMap map = HeapPageMap::build(layout, objects);
  EXPECT_EQ(map.placed, heap.size());
  EXPECT_EQ(map.misfits + map.conflicts, 0u);

  ASSERT_EQ(map.pools.size(), GetParam().pools.size());
  for (size_t i = 0; i < map.pools.size(); ++i) {
    const MapPool& pool = map.pools[i];
    const SizePoolSummary& expected = GetParam().pools[i];
    EXPECT_EQ(pool.slot_size, expected.slot_size);
    EXPECT_EQ(pool.page_count, expected.pages);
    EXPECT_EQ(pool.slots, expected.slots);
    EXPECT_EQ(pool.used, expected.objects);
    // A 64 KiB page holds 65536 / slot_size slots, one fewer when the 8-byte header and the
    // alignment of the first slot take more than the remainder.
    const uint32_t most = 65536 / pool.slot_size;
    for (uint32_t p = pool.first_page; p < pool.first_page + pool.page_count; ++p) {
      const PageSlots& slots = map.pages[p].slots;
      EXPECT_EQ(slots.slot_size, pool.slot_size);
      EXPECT_TRUE(slots.slot_count == most || slots.slot_count == most - 1)
          << slots.slot_count << " slots of " << pool.slot_size << " bytes in page " << p;
      EXPECT_LE(slots.first_slot - slots.body + uint64_t{slots.slot_count} * slots.slot_size, 65536u);
    }
  }
}

TEST_P(SizePoolMap, DrawingHasOneSectionPerPoolAndKnownPixels) {
  const heap::Heap heap = load(GetParam().dump);
  auto drawing = draw_heap_map(heap, {});
  ASSERT_TRUE(drawing) << drawing.message();
  EXPECT_EQ(drawing->pools, GetParam().pools);
  EXPECT_EQ(drawing->undrawn, 0u);
  EXPECT_EQ(drawing->image.width(), GetParam().width);
  EXPECT_EQ(drawing->image.height(), GetParam().height);

  // The map part of the picture (left of the legend): any change to where pages, slots or
  // section labels are drawn changes its digest.
  std::vector<MapObject> objects;
  const ObjectColoring coloring = color_by_type(heap);
  for (size_t id = 0; id < heap.size(); ++id) {
    objects.push_back({heap.address[id], heap.slot_size[id], coloring.category_of[id], false});
  }
  const MapRaster raster = MapRaster::plan(HeapPageMap::build(*drawing->layout.layout, objects));
  ASSERT_EQ(raster.sections.size(), GetParam().pools.size());
  for (size_t i = 1; i < raster.sections.size(); ++i) {
    // Few pages: the sections sit side by side on one row.
    EXPECT_EQ(raster.sections[i].y, 0);
    EXPECT_EQ(raster.sections[i].x,
              raster.sections[i - 1].x + raster.sections[i - 1].width + MapRaster::kSectionGap);
  }
  EXPECT_EQ(digest_of_columns(drawing->image, MapRaster::kMargin + raster.map_width),
            GetParam().map_digest);
}

INSTANTIATE_TEST_SUITE_P(
    Rubies, SizePoolMap,
    ::testing::Values(ExpectedMap{"ruby33_b.json.zst",
                                  {{40, 7, 11462, 6822},
                                   {80, 2, 1637, 849},
                                   {160, 3, 1226, 724},
                                   {320, 1, 204, 22},
                                   {640, 1, 102, 21}},
                                  1540, 1682, 5002393336226399371ull},
                      ExpectedMap{"ruby34_b.json.zst",
                                  {{40, 7, 11462, 6892},
                                   {80, 2, 1637, 937},
                                   {160, 3, 1227, 729},
                                   {320, 1, 203, 21},
                                   {640, 1, 102, 21}},
                                  1540, 1682, 16473599595322165149ull}),
    [](const auto& info) { return info.param.dump.substr(0, 6); });

}  // namespace
}  // namespace memprof::report
