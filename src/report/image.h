// An 8-bit RGB raster that the heap map and its legend are drawn into before PNG encoding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memprof::report {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(const Rgb&, const Rgb&) = default;
};

class Image {
 public:
  Image(int width, int height, Rgb background);

  int width() const { return width_; }
  int height() const { return height_; }

  // Drawing clips to the image: callers lay out in their own coordinates and never index out of
  // bounds, which keeps every renderer free of edge arithmetic.
  void set(int x, int y, Rgb color);
  void fill_rect(int x, int y, int w, int h, Rgb color);
  void stroke_rect(int x, int y, int w, int h, Rgb color);
  Rgb at(int x, int y) const;

  // Row-major, 3 bytes per pixel, rows of width() * 3 bytes: the layout libpng writes.
  const uint8_t* row(int y) const { return pixels_.data() + static_cast<size_t>(y) * width_ * 3; }

 private:
  int width_;
  int height_;
  std::vector<uint8_t> pixels_;
};

}  // namespace memprof::report
