// Trampolines placed near code: within rel32 reach, read+execute and never writable, and packed
// into few mappings. With a mapping of its own per trampoline, `trace -x '*'` on libc made 3,800
// of them, and every patch (which reads /proc/self/maps) took longer than the one before: 10 s
// for 1,900 functions, past the 10 s a launched command was held for.
#include <sys/mman.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/hook/near_memory.h"
#include "core/hook/patch.h"

namespace memprof::hook {
namespace {

__attribute__((noipa)) int nearby_function(int x) { return x + 1; }

size_t mapping_count() {
  std::ifstream maps("/proc/self/maps");
  size_t lines = 0;
  for (std::string line; std::getline(maps, line);) ++lines;
  return lines;
}

TEST(NearMemory, ManyTrampolinesShareFewMappings) {
  constexpr int kTrampolines = 300;
  constexpr int kKind = 9000;  // a kind of its own: no trampoline of another test is reused
  const auto near = reinterpret_cast<uintptr_t>(&nearby_function);
  const size_t before = mapping_count();
  std::vector<uintptr_t> placed;
  for (int i = 0; i < kTrampolines; ++i) {
    auto generate = [i](uintptr_t) -> Result<std::vector<uint8_t>> {
      return std::vector<uint8_t>{0xb8, static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8), 0, 0, 0xc3};  // mov eax, i; ret
    };
    auto address = place_trampoline({kKind, near + static_cast<uintptr_t>(i), 0}, {near, near}, generate);
    ASSERT_TRUE(address.ok()) << address.message();
    placed.push_back(*address);
  }
  EXPECT_LT(mapping_count(), before + 10) << "one mapping per trampoline";
  // The 16 MB below code stay free for a call-site hook, whose trampoline must lie there (the
  // window one store can move a rel32 in). The first arenas, placed nearest the code, took it:
  // Ruby's call sites then had "no free address in ...", and tracking fell back to NEWOBJ.
  auto generate_one = [](uintptr_t) -> Result<std::vector<uint8_t>> { return std::vector<uint8_t>{0xc3}; };
  NearPlacement window{near, near};
  window.window_start = near - (uintptr_t{16} << 20);
  window.window_end = near;
  auto in_window = place_trampoline({kKind, near - 1, 0}, window, generate_one);
  EXPECT_TRUE(in_window.ok()) << in_window.message();
  for (uintptr_t address : placed) {
    const uintptr_t distance = address > near ? address - near : near - address;
    ASSERT_GE(distance, uintptr_t{16} << 20) << "an arena's trampoline next to the code";
  }
  for (int i = 0; i < kTrampolines; ++i) {
    EXPECT_TRUE(rel32_reaches(near, placed[i]) && rel32_reaches(near, placed[i] + 6));
    EXPECT_EQ(reinterpret_cast<int (*)()>(placed[i])(), i);
    EXPECT_EQ(*page_protection(reinterpret_cast<const void*>(placed[i])), PROT_READ | PROT_EXEC);
  }
}

// Placed inside a TrampolineSealing, trampolines stay read+write (never executable) until seal(),
// which makes them read+execute with one mprotect per run of adjacent pages; only then are they
// reused by a later placement of the same code.
TEST(NearMemory, TrampolinesPlacedTogetherAreSealedTogether) {
  constexpr int kTrampolines = 40;
  constexpr int kKind = 9001;
  const auto near = reinterpret_cast<uintptr_t>(&nearby_function);
  auto code_for = [](int i) {
    return [i](uintptr_t) -> Result<std::vector<uint8_t>> {
      return std::vector<uint8_t>{0xb8, static_cast<uint8_t>(i), 0, 0, 0, 0xc3};  // mov eax, i; ret
    };
  };
  std::vector<uintptr_t> placed;
  {
    TrampolineSealing sealing;
    for (int i = 0; i < kTrampolines; ++i) {
      auto address = place_trampoline({kKind, near + static_cast<uintptr_t>(i), 0}, {near, near}, code_for(i));
      ASSERT_TRUE(address.ok()) << address.message();
      placed.push_back(*address);
    }
    for (uintptr_t address : placed)
      EXPECT_EQ(*page_protection(reinterpret_cast<const void*>(address)), PROT_READ | PROT_WRITE);
    ASSERT_TRUE(sealing.seal().ok());
  }
  for (int i = 0; i < kTrampolines; ++i) {
    EXPECT_EQ(*page_protection(reinterpret_cast<const void*>(placed[i])), PROT_READ | PROT_EXEC);
    EXPECT_EQ(reinterpret_cast<int (*)()>(placed[i])(), i);
    auto again = place_trampoline({kKind, near + static_cast<uintptr_t>(i), 0}, {near, near}, code_for(i));
    ASSERT_TRUE(again.ok()) << again.message();
    EXPECT_EQ(*again, placed[i]) << "retained once sealed";
  }
}

}  // namespace
}  // namespace memprof::hook
