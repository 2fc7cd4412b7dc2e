// Test helper: decodes a PNG back into RGB pixels with libpng, to check what was drawn.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/image.h"

namespace memprof::report::testing {

struct DecodedPng {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;  // row-major, 3 bytes per pixel
  std::string error;         // non-empty when decoding failed

  Rgb at(int x, int y) const {
    const size_t i = (static_cast<size_t>(y) * width + x) * 3;
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
};

DecodedPng decode_png(const std::vector<uint8_t>& bytes);
DecodedPng decode_png_file(const std::string& path);

}  // namespace memprof::report::testing
