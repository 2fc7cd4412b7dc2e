#include "report/bitmap_font.h"

#include <gtest/gtest.h>

#include <string>

namespace memprof::report {
namespace {

// The ink of a rectangle as '#'/'.' rows, for comparing against glyph art.
std::string ink(const Image& image, int x0, int y0, int w, int h) {
  std::string out;
  for (int y = y0; y < y0 + h; ++y) {
    for (int x = x0; x < x0 + w; ++x) out += image.at(x, y) == Rgb{0, 0, 0} ? '#' : '.';
    out += '\n';
  }
  return out;
}

TEST(BitmapFont, DrawsGlyphsPixelForPixel) {
  Image image(20, 9, {255, 255, 255});
  const int end = draw_text(image, 1, 1, "1a", {0, 0, 0}, 1);
  EXPECT_EQ(end, 1 + 2 * kGlyphAdvance);
  // "a" is drawn as a capital A.
  EXPECT_EQ(ink(image, 0, 0, 13, 9),
            ".............\n"
            "...#....###..\n"
            "..##...#...#.\n"
            "...#...#...#.\n"
            "...#...#####.\n"
            "...#...#...#.\n"
            "...#...#...#.\n"
            "..###..#...#.\n"
            ".............\n");
}

TEST(BitmapFont, ScalesAndMarksMissingGlyphs) {
  Image image(12, 16, {255, 255, 255});
  draw_text(image, 0, 0, "~", {0, 0, 0}, 2);
  EXPECT_EQ(ink(image, 0, 0, 10, 14).substr(0, 11), "##########\n");  // hollow box, doubled
  EXPECT_EQ(ink(image, 0, 2, 10, 1), "##......##\n");
  EXPECT_EQ(text_width("AB", 2), (2 * kGlyphAdvance - 1) * 2);
  EXPECT_EQ(text_width("", 3), 0);
}

}  // namespace
}  // namespace memprof::report
