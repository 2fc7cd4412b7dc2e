#include "core/util/runtime_library.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include "core/util/zlib_library.h"

namespace memprof {
namespace {

TEST(RuntimeLibrary, AMissingLibrarySaysWhichAndWhy) {
  auto library = RuntimeLibrary::open("libmemprof-absent.so.1");
  ASSERT_FALSE(library.ok());
  EXPECT_EQ(library.message(),
            "cannot open libmemprof-absent.so.1 (libmemprof-absent.so.1: cannot open shared object file: "
            "No such file or directory)");
}

TEST(RuntimeLibrary, AMissingFunctionIsAnErrorNotANullPointer) {
  auto library = RuntimeLibrary::open("libz.so.1");
  ASSERT_TRUE(library.ok()) << library.message();
  decltype(&::crc32) function = nullptr;
  Status bound = library->bind(function, "crc32_of_a_future_zlib");
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.message(), "libz.so.1 has no crc32_of_a_future_zlib (an older version?)");
  EXPECT_EQ(function, nullptr);
}

TEST(RuntimeLibrary, ZlibFunctionsWorkThroughTheOpenedLibrary) {
  const Result<ZlibLibrary>& zlib = ZlibLibrary::get();
  ASSERT_TRUE(zlib.ok()) << zlib.message();
  const unsigned char text[] = "123456789";
  // The CRC-32 check value of "123456789".
  EXPECT_EQ(zlib->crc32(zlib->crc32(0, Z_NULL, 0), text, 9), 0xCBF43926u);
  z_stream stream{};
  ASSERT_EQ(inflate_init2(*zlib, &stream, 15 + 16), Z_OK);
  EXPECT_EQ(zlib->inflateEnd(&stream), Z_OK);
}

}  // namespace
}  // namespace memprof
