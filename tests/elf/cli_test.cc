// `memprof frames` and `memprof symbols FILE` as a user runs them.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>

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

  // Before: "no function symbols with sizes (stripped, ...)", of a file with every symbol.
  auto object = run_command({MEMPROF_CLI, "frames", FRAMES_OBJECT});
  EXPECT_EQ(object.exit_code, 1);
  EXPECT_EQ(object.err, std::string("memprof: ") + FRAMES_OBJECT +
                            ": a relocatable object (.o): frames reads linked executables and "
                            "shared libraries; link it first\n");

  auto bad_top = run_command({MEMPROF_CLI, "frames", FRAMES_PIE, "--top", "many"});
  EXPECT_NE(bad_top.exit_code, 0);
  EXPECT_NE(bad_top.err.find("--top"), std::string::npos) << bad_top.err;
}

TEST(CliSymbols, VersionedSymbolsOfAFile) {
  // Expected from the loader: the address it binds each version to (minus the load bias), and
  // the size in the .dynsym entry it resolves that address through.
  testing::LoadedFixture loaded(FIXTURE_LIB_LAZY);
  ASSERT_NE(loaded.handle(), nullptr) << dlerror();
  std::map<uint64_t, std::string> rows;  // by address, as the command sorts them
  for (const char* name : {"fixture_versioned@FIXTURE_1", "fixture_versioned@@FIXTURE_2"}) {
    void* address = dlvsym(loaded.handle(), "fixture_versioned", std::strrchr(name, '@') + 1);
    Dl_info info{};
    void* symbol_entry = nullptr;
    ASSERT_NE(dladdr1(address, &info, &symbol_entry, RTLD_DL_SYMENT), 0) << name;
    ASSERT_NE(symbol_entry, nullptr) << name;
    auto* entry = static_cast<const Elf64_Sym*>(symbol_entry);
    uint64_t file_address = reinterpret_cast<uint64_t>(address) - loaded.bias();
    rows[file_address] = fmt::format("{:#018x}  {:>8}  func    {}  {}\n", file_address, entry->st_size,
                                     name, FIXTURE_LIB_LAZY);
  }
  std::string expected = fmt::format("{:<18}  {:>8}  {:<6}  NAME  OBJECT\n", "ADDRESS", "SIZE", "TYPE");
  for (const auto& [address, row] : rows) expected += row;
  ASSERT_EQ(rows.size(), 2u);

  auto result = run_command({MEMPROF_CLI, "symbols", FIXTURE_LIB_LAZY, "^fixture_versioned@"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, expected);
  // The plain name matches too (before: only the versioned one, so '^malloc$' found nothing).
  auto plain = run_command({MEMPROF_CLI, "symbols", FIXTURE_LIB_LAZY, "^fixture_versioned$"});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, expected);
}

TEST(CliSymbols, EveryVersionOfOneFunctionAndThreadLocalVariables) {
  testing::LoadedFixture loaded(FIXTURE_LIB_LAZY);
  ASSERT_NE(loaded.handle(), nullptr) << dlerror();
  void* both = dlvsym(loaded.handle(), "fixture_both", "FIXTURE_2");
  Dl_info info{};
  void* symbol_entry = nullptr;
  ASSERT_NE(dladdr1(both, &info, &symbol_entry, RTLD_DL_SYMENT), 0);
  const uint64_t both_size = static_cast<const Elf64_Sym*>(symbol_entry)->st_size;
  const uint64_t both_address = reinterpret_cast<uint64_t>(both) - loaded.bias();
  std::string header = fmt::format("{:<18}  {:>8}  {:<6}  NAME  OBJECT\n", "ADDRESS", "SIZE", "TYPE");
  auto result = run_command({MEMPROF_CLI, "symbols", FIXTURE_LIB_LAZY, "^fixture_both@"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out,
            header +
                fmt::format("{:#018x}  {:>8}  func    fixture_both@FIXTURE_1  {}\n", both_address, both_size,
                            FIXTURE_LIB_LAZY) +
                fmt::format("{:#018x}  {:>8}  func    fixture_both@@FIXTURE_2  {}\n", both_address, both_size,
                            FIXTURE_LIB_LAZY));

  // A thread-local variable: its offset in the object's TLS block, as the loader lays it out.
  auto* variable = static_cast<char*>(dlsym(loaded.handle(), "fixture_thread_counter"));
  ASSERT_NE(variable, nullptr) << dlerror();
  void* block = nullptr;
  ASSERT_EQ(dlinfo(loaded.handle(), RTLD_DI_TLS_DATA, &block), 0) << dlerror();
  auto tls = run_command({MEMPROF_CLI, "symbols", FIXTURE_LIB_LAZY, "thread_counter"});
  EXPECT_EQ(tls.exit_code, 0) << tls.err;
  EXPECT_EQ(tls.out, header + fmt::format("{:#018x}  {:>8}  tls     fixture_thread_counter@@FIXTURE_2  {}\n",
                                          variable - static_cast<char*>(block), 4, FIXTURE_LIB_LAZY));
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
