// Symbols, versions and the GNU hash lookup, checked against what the dynamic loader itself
// resolves (dlsym/dlvsym) for the same file.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>

#include "core/elf/demangle.h"
#include "core/elf/elf_file.h"
#include "core/elf/object_symbols.h"
#include "elf/test_util.h"

namespace memprof::elf {
namespace {

using testing::only_symbol;

using testing::LoadedFixture;

TEST(Symbols, DynamicSymbolsMatchTheLoader) {
  LoadedFixture loaded(FIXTURE_LIB_LAZY);
  ASSERT_NE(loaded.handle(), nullptr) << dlerror();
  auto file = ElfFile::open(FIXTURE_LIB_LAZY);
  ASSERT_TRUE(file.ok());
  auto symbols = file->dynamic_symbols();
  ASSERT_TRUE(symbols.ok()) << symbols.message();
  for (const char* name : {"fixture_add", "fixture_describe", "fixture_stdout", "fixture_counter",
                           "fixture_allocator", "fixture_local_pointer"}) {
    Symbol symbol = only_symbol(*symbols, name);
    EXPECT_EQ(symbol.value + loaded.bias(), reinterpret_cast<uint64_t>(dlsym(loaded.handle(), name)))
        << name;
    EXPECT_EQ(symbol.version, "FIXTURE_2") << name;
    EXPECT_TRUE(symbol.default_version) << name;
    EXPECT_EQ(symbol.bind, STB_GLOBAL) << name;
    EXPECT_EQ(symbol.table, SymbolTable::kDynamic);
  }
  EXPECT_EQ(only_symbol(*symbols, "fixture_add").type, STT_FUNC);
  EXPECT_EQ(only_symbol(*symbols, "fixture_counter").type, STT_OBJECT);
  EXPECT_EQ(only_symbol(*symbols, "fixture_counter").size, 4u);
}

TEST(Symbols, VersionedSymbolDefaultAndHidden) {
  LoadedFixture loaded(FIXTURE_LIB_NOW);
  ASSERT_NE(loaded.handle(), nullptr) << dlerror();
  auto file = ElfFile::open(FIXTURE_LIB_NOW);
  ASSERT_TRUE(file.ok());
  auto v2 = reinterpret_cast<uint64_t>(dlvsym(loaded.handle(), "fixture_versioned", "FIXTURE_2"));
  auto v1 = reinterpret_cast<uint64_t>(dlvsym(loaded.handle(), "fixture_versioned", "FIXTURE_1"));
  ASSERT_NE(v1, v2);

  auto default_version = file->find_dynamic_symbol("fixture_versioned");
  ASSERT_TRUE(default_version.ok()) << default_version.message();
  ASSERT_TRUE(default_version->has_value());
  EXPECT_EQ((*default_version)->version, "FIXTURE_2");
  EXPECT_TRUE((*default_version)->default_version);
  EXPECT_EQ((*default_version)->value + loaded.bias(), v2);

  auto hidden = file->find_dynamic_symbol("fixture_versioned", "FIXTURE_1");
  ASSERT_TRUE(hidden.ok());
  ASSERT_TRUE(hidden->has_value());
  EXPECT_EQ((*hidden)->version, "FIXTURE_1");
  EXPECT_FALSE((*hidden)->default_version);
  EXPECT_EQ((*hidden)->value + loaded.bias(), v1);

  auto unknown_version = file->find_dynamic_symbol("fixture_versioned", "FIXTURE_3");
  ASSERT_TRUE(unknown_version.ok());
  EXPECT_FALSE(unknown_version->has_value());
}

TEST(Symbols, ImportsCarryRequiredVersions) {
  auto file = ElfFile::open(FIXTURE_LIB_LAZY);
  ASSERT_TRUE(file.ok());
  auto symbols = file->dynamic_symbols();
  ASSERT_TRUE(symbols.ok());
  int imports = 0;
  for (const auto& symbol : *symbols) {
    if (symbol.name == "puts" || symbol.name == "strlen" || symbol.name == "malloc") {
      EXPECT_FALSE(symbol.defined());
      EXPECT_EQ(symbol.version, "GLIBC_2.2.5") << symbol.name;  // from .gnu.version_r
      ++imports;
    }
  }
  EXPECT_EQ(imports, 3);
}

TEST(Symbols, GnuHashFindsEveryDefinedSymbolOfLibc) {
  // libc has thousands of versioned symbols, several names with more than one version.
  const char* libc = "/lib/x86_64-linux-gnu/libc.so.6";
  auto file = ElfFile::open(libc);
  ASSERT_TRUE(file.ok()) << file.message();
  ASSERT_NE(file->section_of_type(SHT_GNU_HASH), nullptr);
  auto symbols = file->dynamic_symbols();
  ASSERT_TRUE(symbols.ok());
  size_t checked = 0;
  for (const auto& symbol : *symbols) {
    if (!symbol.defined() || symbol.name.empty()) continue;
    auto found = file->find_dynamic_symbol(symbol.name, symbol.version);
    ASSERT_TRUE(found.ok()) << found.message();
    ASSERT_TRUE(found->has_value()) << symbol.name << "@" << symbol.version;
    EXPECT_EQ((*found)->value, symbol.value) << symbol.name << "@" << symbol.version;
    ++checked;
  }
  EXPECT_GT(checked, 1000u);
  auto missing = file->find_dynamic_symbol("memprof_no_such_symbol");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  // Unversioned lookup picks the default version, like the loader's dlsym.
  auto memcpy_default = file->find_dynamic_symbol("memcpy");
  ASSERT_TRUE(memcpy_default.ok() && memcpy_default->has_value());
  EXPECT_TRUE((*memcpy_default)->default_version);
}

TEST(Symbols, StaticSymbolsOfAnUnstrippedProgram) {
  auto file = ElfFile::open(FRAMES_PIE);
  ASSERT_TRUE(file.ok());
  auto symbols = file->static_symbols();
  ASSERT_TRUE(symbols.ok()) << symbols.message();
  Symbol reactor = only_symbol(*symbols, "reactor_poll");
  EXPECT_EQ(reactor.type, STT_FUNC);
  EXPECT_GT(reactor.size, 0u);
  EXPECT_EQ(reactor.table, SymbolTable::kStatic);
}

TEST(ObjectSymbols, MergedLookupsByNameAndAddress) {
  auto symbols = ObjectSymbols::load(FIXTURE_LIB_LAZY);
  ASSERT_TRUE(symbols.ok()) << symbols.message();
  auto versions = symbols->find("fixture_versioned");
  ASSERT_EQ(versions.size(), 2u);
  auto hidden = symbols->find("fixture_versioned@FIXTURE_1");
  ASSERT_EQ(hidden.size(), 1u);
  EXPECT_EQ(hidden.front()->display_name(), "fixture_versioned@FIXTURE_1");
  auto by_default = symbols->find("fixture_versioned@@FIXTURE_2");
  ASSERT_EQ(by_default.size(), 1u);
  EXPECT_EQ(by_default.front()->display_name(), "fixture_versioned@@FIXTURE_2");

  // fixture_add appears in .dynsym and .symtab: merged into one entry.
  auto add = symbols->find("fixture_add");
  ASSERT_EQ(add.size(), 1u);
  auto match = symbols->find_address(add.front()->address + 3);
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->symbol, add.front());
  EXPECT_EQ(match->offset, 3u);
  EXPECT_FALSE(symbols->find_address(0).has_value());
  EXPECT_TRUE(symbols->find("memprof_no_such_symbol").empty());
  // The semaphore is local (version script "local: *"), so it is only in .symtab.
  auto semaphore = symbols->find("fixture_added_semaphore");
  ASSERT_EQ(semaphore.size(), 1u);
  EXPECT_EQ(semaphore.front()->table, SymbolTable::kStatic);
}

TEST(ObjectSymbols, EntriesAreSortedAndUnique) {
  auto symbols = ObjectSymbols::load("/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_TRUE(symbols.ok()) << symbols.message();
  const auto& entries = symbols->entries();
  ASSERT_FALSE(entries.empty());
  for (size_t i = 1; i < entries.size(); ++i) {
    ASSERT_TRUE(std::tie(entries[i - 1].address, entries[i - 1].name) <
                std::tie(entries[i].address, entries[i].name))
        << entries[i].name;
  }
  // binutils writes "memcpy@@GLIBC_2.14" into .symtab literally; it must merge with .dynsym's.
  EXPECT_EQ(symbols->find("memcpy@@GLIBC_2.14").size(), 1u);
}

}  // namespace
}  // namespace memprof::elf

namespace memprof::elf {
namespace {

TEST(Demangle, CppNamesOnly) {
  EXPECT_EQ(demangle("_ZN3foo3barEv"), "foo::bar()");
  EXPECT_EQ(demangle("_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE4sizeEv"),
            "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::size() const");
  EXPECT_EQ(demangle("rb_newobj"), "rb_newobj");
  EXPECT_EQ(demangle("_Z_not_mangled"), "_Z_not_mangled");
  EXPECT_EQ(demangle(""), "");
}

}  // namespace
}  // namespace memprof::elf
