#include "report/png_encoder.h"

#include <gtest/gtest.h>

#include <string>

#include "png_decode.h"

namespace memprof::report {
namespace {

TEST(PngEncoder, RoundTripsExactPixels) {
  Image image(3, 2, {255, 255, 255});
  image.set(0, 0, {1, 2, 3});
  image.set(2, 1, {200, 100, 50});
  auto png = encode_png(image);
  ASSERT_TRUE(png) << png.message();
  const std::vector<uint8_t> signature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  ASSERT_GE(png->size(), signature.size());
  EXPECT_TRUE(std::equal(signature.begin(), signature.end(), png->begin()));

  const auto decoded = testing::decode_png(*png);
  ASSERT_EQ(decoded.error, "");
  EXPECT_EQ(decoded.width, 3);
  EXPECT_EQ(decoded.height, 2);
  const std::vector<uint8_t> expected = {1,   2,   3,   255, 255, 255, 255, 255, 255,
                                         255, 255, 255, 255, 255, 255, 200, 100, 50};
  EXPECT_EQ(decoded.rgb, expected);
}

TEST(PngEncoder, RefusesAnEmptyImage) {
  EXPECT_EQ(encode_png(Image(0, 5, {})).message(), "cannot encode an empty 0x5 image as PNG");
}

}  // namespace
}  // namespace memprof::report
