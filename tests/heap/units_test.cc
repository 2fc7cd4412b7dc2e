// Numbers in text reports: thousands separators and SI byte units.
#include <gtest/gtest.h>

#include "heap/units.h"

namespace memprof::heap {
namespace {

TEST(Units, CountsGetThousandsSeparators) {
  EXPECT_EQ(count_text(0), "0");
  EXPECT_EQ(count_text(999), "999");
  EXPECT_EQ(count_text(1000), "1,000");
  EXPECT_EQ(count_text(1234567), "1,234,567");
  EXPECT_EQ(count_text(18446744073709551615ull), "18,446,744,073,709,551,615");
  EXPECT_EQ(byte_count_text(0), "0 bytes");
  EXPECT_EQ(byte_count_text(1), "1 byte");
  EXPECT_EQ(byte_count_text(5248), "5,248 bytes");
  // native's summary said "1 blocks".
  EXPECT_EQ(counted_text(1, "block", "blocks"), "1 block");
  EXPECT_EQ(counted_text(0, "temporary", "temporaries"), "0 temporaries");
  EXPECT_EQ(counted_text(2048, "block", "blocks"), "2,048 blocks");
}

TEST(Units, BytesInSiUnitsWithOneDecimal) {
  EXPECT_EQ(bytes_text(0), "0 B");
  EXPECT_EQ(bytes_text(999), "999 B");
  EXPECT_EQ(bytes_text(1000), "1.0 kB");
  EXPECT_EQ(bytes_text(12345), "12.3 kB");
  EXPECT_EQ(bytes_text(999949), "999.9 kB");
  EXPECT_EQ(bytes_text(999950), "1.0 MB");  // not "1000.0 kB"
  EXPECT_EQ(bytes_text(12345678), "12.3 MB");
  EXPECT_EQ(bytes_text(2014859), "2.0 MB");
  EXPECT_EQ(bytes_text(1234567890123ull), "1.2 TB");
}

}  // namespace
}  // namespace memprof::heap
