// `memprof frames` and `memprof symbols FILE` as a user runs them.
#include <gtest/gtest.h>

#include <sstream>

#include "core/elf/object_symbols.h"
#include "elf/test_util.h"
#include "proc/subprocess.h"

#ifdef MEMPROF_CLI
namespace memprof::elf {
namespace {

using memprof::testing::run_command;

TEST(CliFrames, LargestFrameOnTop) {
  auto measure = run_command({FRAMES_PIE, "measure"});
  ASSERT_EQ(measure.exit_code, 0);
  uint64_t reactor = std::stoull(measure.out.substr(measure.out.find(' ') + 1));
  auto result = run_command({MEMPROF_CLI, "frames", FRAMES_PIE, "--top", "1"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(result.out, fmt::format("{:>10}  FUNCTION  OBJECT\n{:>10}  reactor_poll  {}\n", "BYTES",
                                    reactor, FRAMES_PIE));
}

TEST(CliFrames, Errors) {
  auto missing = run_command({MEMPROF_CLI, "frames", "/nonexistent/program"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.out, "");
  EXPECT_EQ(missing.err, "memprof: /nonexistent/program: No such file or directory\n");

  std::string text = testing::temp_dir("cli_frames") + "/notes.txt";
  testing::write_bytes(text, {'h', 'i', '\n'});
  auto not_elf = run_command({MEMPROF_CLI, "frames", text});
  EXPECT_EQ(not_elf.exit_code, 1);
  EXPECT_EQ(not_elf.err, "memprof: " + text + ": not an ELF file\n");

  auto stripped = run_command({MEMPROF_CLI, "frames", STRIPPED_BY_DEBUGLINK, "--no-debug-files"});
  EXPECT_EQ(stripped.exit_code, 1);
  EXPECT_EQ(stripped.err, std::string("memprof: ") + STRIPPED_BY_DEBUGLINK +
                              ": no function symbols with sizes (stripped, and no debug file found)\n");

  auto bad_top = run_command({MEMPROF_CLI, "frames", FRAMES_PIE, "--top", "many"});
  EXPECT_NE(bad_top.exit_code, 0);
  EXPECT_NE(bad_top.err.find("--top"), std::string::npos) << bad_top.err;
}

TEST(CliSymbols, VersionedSymbolsOfAFile) {
  auto symbols = ObjectSymbols::load(FIXTURE_LIB_LAZY);
  ASSERT_TRUE(symbols.ok());
  auto v1 = symbols->find("fixture_versioned@FIXTURE_1");
  auto v2 = symbols->find("fixture_versioned@@FIXTURE_2");
  ASSERT_EQ(v1.size(), 1u);
  ASSERT_EQ(v2.size(), 1u);
  auto result = run_command({MEMPROF_CLI, "symbols", FIXTURE_LIB_LAZY, "^fixture_versioned@"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  // Sorted by address: v1 is defined first in the source.
  std::string expected =
      fmt::format("{:<18}  {:>8}  {:<6}  NAME  OBJECT\n", "ADDRESS", "SIZE", "TYPE") +
      fmt::format("{:#018x}  {:>8}  func    fixture_versioned@FIXTURE_1  {}\n", v1.front()->address,
                  v1.front()->size, FIXTURE_LIB_LAZY) +
      fmt::format("{:#018x}  {:>8}  func    fixture_versioned@@FIXTURE_2  {}\n",
                  v2.front()->address, v2.front()->size, FIXTURE_LIB_LAZY);
  EXPECT_EQ(result.out, expected);
}

TEST(CliSymbols, Errors) {
  auto none = run_command({MEMPROF_CLI, "symbols", FIXTURE_LIB_LAZY, "^memprof_nothing$"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.out, "");
  EXPECT_EQ(none.err, std::string("memprof: no symbol matches '^memprof_nothing$' in ") +
                          FIXTURE_LIB_LAZY + "\n");
  auto bad_regex = run_command({MEMPROF_CLI, "symbols", FIXTURE_LIB_LAZY, "(unclosed"});
  EXPECT_EQ(bad_regex.exit_code, 1);
  EXPECT_EQ(bad_regex.err.rfind("memprof: invalid REGEX '(unclosed': ", 0), 0u) << bad_regex.err;
  auto missing = run_command({MEMPROF_CLI, "symbols", "/nonexistent/lib.so"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "memprof: /nonexistent/lib.so: No such file or directory\n");
}

}  // namespace
}  // namespace memprof::elf
#endif  // MEMPROF_CLI
