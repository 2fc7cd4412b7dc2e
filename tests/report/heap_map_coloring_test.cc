#include "report/heap_map_coloring.h"

#include <gtest/gtest.h>

#include <string>

#include "heap/loader.h"

namespace memprof::report {
namespace {

// A dump of STRINGs with the given generations (kNoGeneration: no field), 40 bytes apart.
heap::Heap strings_with_generations(const std::vector<uint32_t>& generations) {
  std::string text;
  uint64_t address = 0x7f0000020008;
  for (uint32_t g : generations) {
    text += fmt::format("{{\"address\":\"{:#x}\", \"type\":\"STRING\"", address);
    if (g != heap::kNoGeneration) text += fmt::format(", \"generation\":{}", g);
    text += ", \"memsize\":40}\n";
    address += 40;
  }
  auto heap = heap::load_heap_from_bytes(
      {reinterpret_cast<const unsigned char*>(text.data()), text.size()}, "test");
  EXPECT_TRUE(heap) << heap.message();
  return std::move(heap).value();
}

TEST(GenerationColoring, RangesHoldEqualShares) {
  const uint32_t none = heap::kNoGeneration;
  const heap::Heap heap =
      strings_with_generations({42, 1, 40, 40, 40, 40, 41, 41, 41, 41, 42, 42, 42, none, none});
  const ObjectColoring coloring = color_by_generation(heap, 3);
  ASSERT_EQ(coloring.categories.size(), 4u);
  // The lone boot-time object joins the first range instead of taking a color of its own.
  EXPECT_EQ(coloring.categories[0].label, "GEN 1-40");
  EXPECT_EQ(coloring.categories[0].count, 5u);
  EXPECT_EQ(coloring.categories[1].label, "GEN 41");
  EXPECT_EQ(coloring.categories[1].count, 4u);
  EXPECT_EQ(coloring.categories[2].label, "GEN 42");
  EXPECT_EQ(coloring.categories[2].count, 4u);
  EXPECT_EQ(coloring.categories[3].label, "NO GENERATION");
  EXPECT_EQ(coloring.categories[3].count, 2u);
  EXPECT_EQ(coloring.categories[0].color, (Rgb{49, 54, 149}));   // oldest: blue
  EXPECT_EQ(coloring.categories[2].color, (Rgb{215, 48, 39}));   // youngest: red
  const std::vector<uint16_t> expected = {2, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 3, 3};
  EXPECT_EQ(coloring.category_of, expected);
}

TEST(GenerationColoring, UntracedDumpHasOneCategory) {
  const heap::Heap heap = strings_with_generations({heap::kNoGeneration, heap::kNoGeneration});
  const ObjectColoring coloring = color_by_generation(heap);
  ASSERT_EQ(coloring.categories.size(), 1u);
  EXPECT_EQ(coloring.categories[0].label, "NO GENERATION");
  EXPECT_EQ(coloring.categories[0].count, 2u);
}

TEST(TypeColoring, MostCommonTypeFirst) {
  std::string text =
      "{\"address\":\"0x7f0000020008\", \"type\":\"HASH\", \"memsize\":40}\n"
      "{\"address\":\"0x7f0000020030\", \"type\":\"ARRAY\", \"memsize\":40}\n"
      "{\"address\":\"0x7f0000020058\", \"type\":\"ARRAY\", \"memsize\":40}\n";
  auto heap = heap::load_heap_from_bytes(
      {reinterpret_cast<const unsigned char*>(text.data()), text.size()}, "test");
  ASSERT_TRUE(heap);
  const ObjectColoring coloring = color_by_type(*heap);
  ASSERT_EQ(coloring.categories.size(), 2u);
  EXPECT_EQ(coloring.categories[0].label, "ARRAY");
  EXPECT_EQ(coloring.categories[0].count, 2u);
  EXPECT_EQ(coloring.categories[0].color, (Rgb{255, 127, 14}));
  EXPECT_EQ(coloring.categories[1].label, "HASH");
  const std::vector<uint16_t> expected = {1, 0, 0};
  EXPECT_EQ(coloring.category_of, expected);
}

}  // namespace
}  // namespace memprof::report
