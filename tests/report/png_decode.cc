#include "png_decode.h"

#include <png.h>

#include <cstring>

namespace memprof::report::testing {
namespace {

DecodedPng finish(png_image& image) {
  DecodedPng out;
  if (PNG_IMAGE_FAILED(image)) {
    out.error = image.message;
    return out;
  }
  image.format = PNG_FORMAT_RGB;
  out.width = static_cast<int>(image.width);
  out.height = static_cast<int>(image.height);
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr)) {
    out.error = image.message;
  }
  png_image_free(&image);
  return out;
}

}  // namespace

DecodedPng decode_png(const std::vector<uint8_t>& bytes) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  png_image_begin_read_from_memory(&image, bytes.data(), bytes.size());
  return finish(image);
}

DecodedPng decode_png_file(const std::string& path) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  png_image_begin_read_from_file(&image, path.c_str());
  return finish(image);
}

}  // namespace memprof::report::testing
