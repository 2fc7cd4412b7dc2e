#include <gtest/gtest.h>

#include <algorithm>

#include "core/elf/debug_file.h"
#include "core/elf/elf_file.h"
#include "elf/test_util.h"

namespace memprof::elf {
namespace {

constexpr const char* kLibruby = "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1";

TEST(Notes, BuildIdGivenToTheLinker) {
  auto file = ElfFile::open(FIXTURE_LIB_LAZY);
  ASSERT_TRUE(file.ok());
  auto id = file->build_id();
  ASSERT_TRUE(id.ok()) << id.message();
  EXPECT_EQ(*id, FIXTURE_LIB_BUILD_ID);
}

TEST(Notes, FixtureUsdtProbe) {
  auto file = ElfFile::open(FIXTURE_LIB_LAZY);
  ASSERT_TRUE(file.ok());
  auto probes = file->usdt_probes();
  ASSERT_TRUE(probes.ok()) << probes.message();
  ASSERT_EQ(probes->size(), 1u);
  const UsdtProbe& probe = probes->front();
  EXPECT_EQ(probe.provider, "fixture");
  EXPECT_EQ(probe.name, "added");
  // One argument: the int a + b (signed, 4 bytes) in whatever register the compiler chose.
  ASSERT_EQ(probe.parsed_arguments.size(), 1u);
  EXPECT_EQ(probe.parsed_arguments[0].size, -4);
  EXPECT_EQ(probe.arguments, "-4@" + std::string(probe.parsed_arguments[0].location));

  auto statics = file->static_symbols();
  ASSERT_TRUE(statics.ok());
  EXPECT_EQ(probe.semaphore, testing::only_symbol(*statics, "fixture_added_semaphore").value);
  // The probe site is a nop inside fixture_add.
  Symbol add = testing::only_symbol(*statics, "fixture_add");
  EXPECT_GE(probe.pc, add.value);
  EXPECT_LT(probe.pc, add.value + add.size);
  auto site = file->bytes_at_address(probe.pc, 1);
  ASSERT_TRUE(site.ok());
  EXPECT_EQ((*site)[0], 0x90);
}

TEST(Notes, LibrubyUsdtProbes) {
  auto file = ElfFile::open(kLibruby);
  if (!file.ok()) GTEST_SKIP() << "no libruby-3.1 on this machine: " << file.message();
  auto probes = file->usdt_probes();
  ASSERT_TRUE(probes.ok()) << probes.message();
  ASSERT_FALSE(probes->empty());
  for (const auto& probe : *probes) {
    EXPECT_EQ(probe.provider, "ruby");
    auto site = file->bytes_at_address(probe.pc, 1);
    ASSERT_TRUE(site.ok()) << probe.name;
    EXPECT_EQ((*site)[0], 0x90) << probe.name;  // every SDT probe site is a nop
  }
  auto create = std::find_if(probes->begin(), probes->end(),
                             [](const UsdtProbe& p) { return p.name == "object__create"; });
  ASSERT_NE(create, probes->end());
  // ruby:object__create(classname, filename, lineno).
  EXPECT_EQ(create->parsed_arguments.size(), 3u);
  EXPECT_NE(create->semaphore, 0u);
  for (const char* name : {"gc__mark__begin", "gc__sweep__end", "method__entry", "raise"}) {
    EXPECT_TRUE(std::any_of(probes->begin(), probes->end(),
                            [&](const UsdtProbe& p) { return p.name == name; }))
        << name;
  }
}

TEST(Notes, DebugLinkOfAStrippedProgram) {
  auto file = ElfFile::open(STRIPPED_BY_DEBUGLINK);
  ASSERT_TRUE(file.ok());
  auto link = file->debuglink();
  ASSERT_TRUE(link.ok()) << link.message();
  ASSERT_TRUE(link->has_value());
  EXPECT_EQ((*link)->file, "frames_program.debug");
  EXPECT_EQ((*link)->crc, debuglink_crc(testing::read_bytes(STRIPPED_DEBUGLINK_TARGET)));

  auto unlinked = ElfFile::open(FRAMES_PIE);
  ASSERT_TRUE(unlinked.ok());
  auto none = unlinked->debuglink();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(Notes, DebuglinkCrcIsZlibCrc32) {
  // The check value of CRC-32 ("123456789" -> 0xCBF43926).
  const unsigned char text[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(debuglink_crc(Bytes(text, sizeof(text))), 0xCBF43926u);
}

}  // namespace
}  // namespace memprof::elf
