#include "report/heap_map.h"

#include <gtest/gtest.h>

#include <string>

#include "heap/loader.h"
#include "report/html_report.h"

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

// 20,000 pages with one object each: 50 bands of 400 three-pixel columns.
heap::Heap one_object_per_page(uint64_t pages) {
  std::string text;
  for (uint64_t page = 0; page < pages; ++page) {
    const uint64_t body = 0x7f0000000000 + page * 0x10000;
    const uint64_t first = (body + 8 + 39) / 40 * 40;
    text += fmt::format("{{\"address\":\"{:#x}\", \"type\":\"STRING\", \"memsize\":40}}\n", first);
  }
  return load_text(text);
}

// Sparse pages like these fit 16 KiB pages too; the layout is given, as with --ruby-version.
HeapMapOptions ruby31() {
  HeapMapOptions options;
  options.layout = *layout_for_ruby_version("3.1");
  return options;
}

TEST(HeapMap, RefusesPicturesTooLargeToHoldInMemory) {
  const heap::Heap heap = one_object_per_page(20000);
  ASSERT_EQ(heap.size(), 20000u);
  const auto drawing = draw_heap_map(heap, ruby31());
  ASSERT_FALSE(drawing);
  EXPECT_EQ(drawing.message(),
            "20,000 pages would make a 1600x82704 picture; memprof draws at most 120 million "
            "pixels");  // 50 bands of 1638 rows, 49 gaps of 16, the 20-row size pool label
}

TEST(HeapMap, HtmlReportLeavesOutAMapTooLargeAndSaysWhy) {
  const heap::Heap heap = one_object_per_page(20000);
  HtmlReportOptions options;
  options.heapmap = ruby31();
  const auto report = render_html_report("big", heap, options);
  ASSERT_TRUE(report) << report.message();
  EXPECT_EQ(report->heapmap_png_bytes, 0u);
  EXPECT_EQ(report->heapmap_error,
            "20,000 pages would make a 1600x82704 picture; memprof draws at most 120 million "
            "pixels");
  EXPECT_EQ(report->html.find("data:image/png"), std::string::npos);
  EXPECT_EQ(report->objects, 20000u);
}

}  // namespace
}  // namespace memprof::report
