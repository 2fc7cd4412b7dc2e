#include "core/util/huge_page_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>

#include "vm_flags.h"

namespace memprof {
namespace {

TEST(HugePageAllocator, BigArraysLiveInAlignedHugePageMappings) {
  BigVector<uint64_t> values(3'000'000);  // 24 MB
  std::iota(values.begin(), values.end(), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(values.data()) % huge_pages::kSize, 0u);
  EXPECT_NE(vm_flags_at(values.data()).find(" hg"), std::string::npos) << vm_flags_at(values.data());
  EXPECT_EQ(values[2'999'999], 2'999'999u);
}

TEST(HugePageAllocator, SmallArraysComeFromTheUsualHeap) {
  BigVector<uint64_t> values(1000);
  EXPECT_EQ(vm_flags_at(values.data()).find(" hg"), std::string::npos) << vm_flags_at(values.data());
}

TEST(HugePageAllocator, GrowingKeepsTheContentsAndFreeingUnmaps) {
  BigVector<uint32_t> values;
  for (uint32_t i = 0; i < 2'000'000; ++i) values.push_back(i * 7);  // 8 MB, grown past 2 MB
  for (uint32_t i = 0; i < 2'000'000; i += 99'999) ASSERT_EQ(values[i], i * 7);
  const void* block = values.data();
  ASSERT_NE(vm_flags_at(block), "");
  BigVector<uint32_t>().swap(values);
  EXPECT_EQ(vm_flags_at(block), "");
}

}  // namespace
}  // namespace memprof
