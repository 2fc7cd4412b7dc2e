#include "core/util/huge_page_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>

#include "core/util/proc_file.h"

namespace memprof {
namespace {

// The "VmFlags:" line of the mapping of /proc/self/smaps that holds `address`, or "" when no
// mapping holds it.
std::string vm_flags_at(const void* address) {
  auto smaps = read_proc_file("/proc/self/smaps");
  EXPECT_TRUE(smaps.ok()) << smaps.message();
  const auto target = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  size_t position = 0;
  const std::string& text = *smaps;
  while (position < text.size()) {
    size_t end = text.find('\n', position);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(position, end - position);
    position = end + 1;
    uintptr_t start = 0, stop = 0;
    // A mapping's first line starts "start-end "; its fields' lines ("Size:", ...) do not.
    if (std::sscanf(line.c_str(), "%lx-%lx ", &start, &stop) == 2) {
      inside = start <= target && target < stop;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

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
