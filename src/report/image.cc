#include "report/image.h"

#include <algorithm>

namespace memprof::report {

Image::Image(int width, int height, Rgb background)
    : width_(std::max(width, 0)), height_(std::max(height, 0)),
      pixels_(static_cast<size_t>(width_) * height_ * 3) {
  fill_rect(0, 0, width_, height_, background);
}

void Image::set(int x, int y, Rgb color) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  uint8_t* p = pixels_.data() + (static_cast<size_t>(y) * width_ + x) * 3;
  p[0] = color.r;
  p[1] = color.g;
  p[2] = color.b;
}

void Image::fill_rect(int x, int y, int w, int h, Rgb color) {
  const int x0 = std::max(x, 0), y0 = std::max(y, 0);
  const int x1 = std::min(x + w, width_), y1 = std::min(y + h, height_);
  for (int yy = y0; yy < y1; ++yy) {
    uint8_t* p = pixels_.data() + (static_cast<size_t>(yy) * width_ + x0) * 3;
    for (int xx = x0; xx < x1; ++xx, p += 3) {
      p[0] = color.r;
      p[1] = color.g;
      p[2] = color.b;
    }
  }
}

void Image::stroke_rect(int x, int y, int w, int h, Rgb color) {
  if (w <= 0 || h <= 0) return;
  fill_rect(x, y, w, 1, color);
  fill_rect(x, y + h - 1, w, 1, color);
  fill_rect(x, y, 1, h, color);
  fill_rect(x + w - 1, y, 1, h, color);
}

Rgb Image::at(int x, int y) const {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return {};
  const uint8_t* p = pixels_.data() + (static_cast<size_t>(y) * width_ + x) * 3;
  return {p[0], p[1], p[2]};
}

}  // namespace memprof::report
