#include "core/elf/debug_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/elf/object_symbols.h"
#include "elf/test_util.h"

namespace memprof::elf {
namespace {

const DebugSearchPath kFixtureRoot{{DEBUG_ROOT}};
const DebugSearchPath kNoRoot{{"/nonexistent-debug-root"}};

std::optional<std::string> lookup(const std::string& path, const DebugSearchPath& search) {
  auto file = ElfFile::open(path);
  EXPECT_TRUE(file.ok()) << file.message();
  if (!file.ok()) return std::nullopt;
  auto found = find_debug_file(*file, path, search);
  EXPECT_TRUE(found.ok()) << found.message();
  return found.ok() ? *found : std::nullopt;
}

TEST(DebugFile, FoundByBuildId) {
  EXPECT_EQ(lookup(STRIPPED_BY_BUILD_ID, kFixtureRoot), std::optional<std::string>(BUILD_ID_DEBUG_FILE));
  EXPECT_EQ(lookup(STRIPPED_BY_BUILD_ID, kNoRoot), std::nullopt);
}

TEST(DebugFile, FoundByDebuglinkNextToTheFile) {
  EXPECT_EQ(lookup(STRIPPED_BY_DEBUGLINK, kNoRoot),
            std::optional<std::string>(STRIPPED_DEBUGLINK_TARGET));
}

TEST(DebugFile, StaleCandidatesAreRejected) {
  // A debug file whose CRC does not match the debuglink, next to a copy of the stripped program.
  std::string dir = testing::temp_dir("stale_debuglink");
  std::filesystem::copy_file(STRIPPED_BY_DEBUGLINK, dir + "/program");
  auto debug = testing::read_bytes(STRIPPED_DEBUGLINK_TARGET);
  debug.back() ^= 0xff;
  testing::write_bytes(dir + "/frames_program.debug", debug);
  EXPECT_EQ(lookup(dir + "/program", kNoRoot), std::nullopt);

  // An ELF file with another build-id sitting at the build-id path.
  std::string root = testing::temp_dir("stale_build_id");
  std::string id = FRAMES_BUILD_ID;
  std::filesystem::create_directories(root + "/.build-id/" + id.substr(0, 2));
  std::filesystem::copy_file(FIXTURE_LIB_LAZY, root + "/.build-id/" + id.substr(0, 2) + "/" +
                                                   id.substr(2) + ".debug");
  EXPECT_EQ(lookup(STRIPPED_BY_BUILD_ID, DebugSearchPath{{root}}), std::nullopt);
}

TEST(DebugFile, SymbolsMergedFromTheDebugFile) {
  auto stripped = ObjectSymbols::load(STRIPPED_BY_BUILD_ID, false);
  ASSERT_TRUE(stripped.ok()) << stripped.message();
  EXPECT_TRUE(stripped->find("reactor_poll").empty());
  EXPECT_FALSE(stripped->debug_file_path().has_value());

  auto merged = ObjectSymbols::load(STRIPPED_BY_BUILD_ID, true, kFixtureRoot);
  ASSERT_TRUE(merged.ok()) << merged.message();
  EXPECT_EQ(merged->debug_file_path(), std::optional<std::string>(BUILD_ID_DEBUG_FILE));
  auto unstripped = ObjectSymbols::load(FRAMES_PIE, false);
  ASSERT_TRUE(unstripped.ok());
  for (const char* name : {"reactor_poll", "medium_frame", "small_frame", "main"}) {
    auto from_debug = merged->find(name);
    auto original = unstripped->find(name);
    ASSERT_EQ(from_debug.size(), 1u) << name;
    ASSERT_EQ(original.size(), 1u) << name;
    EXPECT_EQ(from_debug.front()->address, original.front()->address) << name;
    EXPECT_EQ(from_debug.front()->size, original.front()->size) << name;
  }
}

}  // namespace
}  // namespace memprof::elf
