#include "core/track/heap_ranges.h"

#include <gtest/gtest.h>

namespace memprof::track {
namespace {

TEST(HeapRanges, SlotStartsInsideRangesOnly) {
  HeapRanges ranges;
  ranges.add(0x20000, 0x20000 + 40 * 10, 40);
  ranges.add(0x10000, 0x10000 + 40 * 10, 40);
  ranges.add(0x30000, 0x30000, 40);  // empty: ignored
  ranges.seal();
  EXPECT_EQ(ranges.size(), 2u);
  EXPECT_TRUE(ranges.contains_slot(0x10000));
  EXPECT_TRUE(ranges.contains_slot(0x10000 + 40 * 9));
  EXPECT_FALSE(ranges.contains_slot(0x10000 + 40 * 10));  // end is exclusive
  EXPECT_FALSE(ranges.contains_slot(0x10000 + 8));        // inside a slot
  EXPECT_TRUE(ranges.contains_slot(0x20000 + 40));
  EXPECT_FALSE(ranges.contains_slot(0xfff8));
  EXPECT_FALSE(ranges.contains_slot(0x30000));
  EXPECT_FALSE(ranges.contains_slot(0));
}

}  // namespace
}  // namespace memprof::track
