#include "report/heap_map.h"

#include <gtest/gtest.h>

#include <string>

#include "heap/loader.h"

namespace memprof::report {
namespace {

heap::Heap load_text(const std::string& text) {
  auto heap = heap::load_heap_from_bytes(
      {reinterpret_cast<const unsigned char*>(text.data()), text.size()}, "test");
  EXPECT_TRUE(heap) << heap.message();
  return std::move(heap).value();
}

TEST(HeapMap, CountsWhatItDraws) {
  auto heap = heap::load_heap(std::string(FIXTURE_DIR) + "/small_heap.json");
  ASSERT_TRUE(heap);
  auto drawing = draw_heap_map(*heap, {});
  ASSERT_TRUE(drawing) << drawing.message();
  EXPECT_EQ(drawing->pages, 1u);
  EXPECT_EQ(drawing->slots, 1637u);
  EXPECT_EQ(drawing->objects, 12u);
  EXPECT_EQ(drawing->pinned, 1u);
  EXPECT_EQ(drawing->undrawn, 0u);
  EXPECT_EQ(drawing->layout.layout->name, "Ruby 3.1+");
}

TEST(HeapMap, OptionsFromTheCommandLine) {
  auto options = heap_map_options("generation", "2.7");
  ASSERT_TRUE(options);
  EXPECT_EQ(options->coloring, MapColoring::kGeneration);
  EXPECT_EQ(options->layout->name, "Ruby 2.x-3.0");
  options = heap_map_options("type", "");
  ASSERT_TRUE(options);
  EXPECT_EQ(options->coloring, MapColoring::kType);
  EXPECT_EQ(options->layout, nullptr);
  EXPECT_EQ(heap_map_options("size", "").message(),
            "--by must be 'type' or 'generation', not 'size'");
}

TEST(HeapMap, RefusesPicturesTooLargeToHoldInMemory) {
  // 20,000 pages with one object each: 50 bands of 400 three-pixel columns.
  std::string text;
  for (uint64_t page = 0; page < 20000; ++page) {
    const uint64_t body = 0x7f0000000000 + page * 0x10000;
    const uint64_t first = (body + 8 + 39) / 40 * 40;
    text += fmt::format("{{\"address\":\"{:#x}\", \"type\":\"STRING\", \"memsize\":40}}\n", first);
  }
  const heap::Heap heap = load_text(text);
  ASSERT_EQ(heap.size(), 20000u);
  // Sparse pages like these fit 16 KiB pages too; the layout is given, as with --ruby-version.
  HeapMapOptions options;
  options.layout = *layout_for_ruby_version("3.1");
  const auto drawing = draw_heap_map(heap, options);
  ASSERT_FALSE(drawing);
  EXPECT_EQ(drawing.message(),
            "20000 pages would make a 1600x82684 picture; memprof draws at most 120 million "
            "pixels");
}

}  // namespace
}  // namespace memprof::report
