// Symbols, versions and the GNU hash lookup, checked against what the dynamic loader itself
// resolves (dlsym/dlvsym) for the same file.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>

#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

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
  std::set<std::tuple<uint64_t, std::string_view, std::string_view>> seen;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) {
      ASSERT_TRUE(std::tie(entries[i - 1].address, entries[i - 1].name) <=
                  std::tie(entries[i].address, entries[i].name))
          << entries[i].name;
    }
    ASSERT_TRUE(seen.emplace(entries[i].address, entries[i].name, entries[i].version).second)
        << entries[i].display_name();
  }
  // binutils writes "memcpy@@GLIBC_2.14" into .symtab literally; it must merge with .dynsym's.
  EXPECT_EQ(symbols->find("memcpy@@GLIBC_2.14").size(), 1u);
}

TEST(ObjectSymbols, EveryVersionOfEveryDynamicSymbolOfLibcIsAnEntry) {
  // libc exports some functions under two versions at one address (aio_cancel@GLIBC_2.2.5 and
  // aio_cancel@@GLIBC_2.34 since glibc 2.34 merged librt): each is an entry of its own.
  const char* libc = "/lib/x86_64-linux-gnu/libc.so.6";
  auto file = ElfFile::open(libc);
  ASSERT_TRUE(file.ok()) << file.message();
  auto dynamic = file->dynamic_symbols();
  ASSERT_TRUE(dynamic.ok()) << dynamic.message();
  auto symbols = ObjectSymbols::load(libc);
  ASSERT_TRUE(symbols.ok()) << symbols.message();
  std::set<std::tuple<uint64_t, std::string_view, std::string_view>> entries;
  for (const auto& entry : symbols->entries()) entries.emplace(entry.address, entry.name, entry.version);
  for (const auto& entry : symbols->thread_locals()) entries.emplace(entry.address, entry.name, entry.version);
  size_t checked = 0;
  size_t shared_address = 0;  // versions that share their address with another version
  std::map<std::pair<uint64_t, std::string_view>, int> versions;
  for (const auto& symbol : *dynamic) {
    if (!symbol.defined() || symbol.name.empty() || symbol.section_index == SHN_ABS) continue;
    if (symbol.type != STT_FUNC && symbol.type != STT_GNU_IFUNC && symbol.type != STT_OBJECT &&
        symbol.type != STT_TLS) {
      continue;
    }
    EXPECT_EQ(entries.count({symbol.value, symbol.name, symbol.version}), 1u)
        << symbol.name << "@" << symbol.version;
    if (++versions[{symbol.value, symbol.name}] == 2) ++shared_address;
    ++checked;
  }
  EXPECT_GT(checked, 2000u);
  EXPECT_GT(shared_address, 10u);  // 100 on Debian 12's glibc 2.36
  EXPECT_EQ(symbols->find("aio_cancel").size(), 2u);
}

TEST(ObjectSymbols, OneFunctionUnderTwoVersionsIsTwoEntries) {
  LoadedFixture loaded(FIXTURE_LIB_LAZY);
  ASSERT_NE(loaded.handle(), nullptr) << dlerror();
  auto v1 = reinterpret_cast<uint64_t>(dlvsym(loaded.handle(), "fixture_both", "FIXTURE_1"));
  auto v2 = reinterpret_cast<uint64_t>(dlvsym(loaded.handle(), "fixture_both", "FIXTURE_2"));
  ASSERT_NE(v1, 0u);
  ASSERT_EQ(v1, v2);  // the fixture's premise: one function
  auto symbols = ObjectSymbols::load(FIXTURE_LIB_LAZY);
  ASSERT_TRUE(symbols.ok()) << symbols.message();
  auto both = symbols->find("fixture_both");
  ASSERT_EQ(both.size(), 2u);
  std::set<std::string> names;
  for (const auto* entry : both) {
    EXPECT_EQ(entry->address + loaded.bias(), v1) << entry->display_name();
    EXPECT_EQ(entry->table, SymbolTable::kDynamic) << entry->display_name();
    names.insert(entry->display_name());
  }
  EXPECT_EQ(names, (std::set<std::string>{"fixture_both@FIXTURE_1", "fixture_both@@FIXTURE_2"}));
}

TEST(ObjectSymbols, ThreadLocalVariablesAreOffsetsListedApart) {
  LoadedFixture loaded(FIXTURE_LIB_LAZY);
  ASSERT_NE(loaded.handle(), nullptr) << dlerror();
  // The loader's answer: this thread's copy of the variable, and this thread's TLS block of the
  // object (dlsym allocated it).
  auto* variable = static_cast<char*>(dlsym(loaded.handle(), "fixture_thread_counter"));
  ASSERT_NE(variable, nullptr) << dlerror();
  EXPECT_EQ(*reinterpret_cast<int*>(variable), 11);
  void* block = nullptr;
  ASSERT_EQ(dlinfo(loaded.handle(), RTLD_DI_TLS_DATA, &block), 0) << dlerror();
  ASSERT_NE(block, nullptr);
  const auto offset = static_cast<uint64_t>(variable - static_cast<char*>(block));

  auto symbols = ObjectSymbols::load(FIXTURE_LIB_LAZY);
  ASSERT_TRUE(symbols.ok()) << symbols.message();
  ASSERT_EQ(symbols->thread_locals().size(), 1u);
  const auto& counter = symbols->thread_locals().front();
  EXPECT_EQ(counter.display_name(), "fixture_thread_counter@@FIXTURE_2");
  EXPECT_EQ(counter.address, offset);
  EXPECT_EQ(counter.size, 4u);
  EXPECT_EQ(counter.type, STT_TLS);
  // Not an address: neither found by name among the entries nor matched by address.
  EXPECT_TRUE(symbols->find("fixture_thread_counter").empty());
  auto at_offset = symbols->find_address(offset);
  EXPECT_TRUE(!at_offset || at_offset->symbol->name != "fixture_thread_counter");
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

// Mangled symbols (from real objects, as the symbol tables hold them) and their short names.
struct ShortNameCase {
  std::string_view mangled;
  std::string_view short_name;
};

void expect_short_names(std::initializer_list<ShortNameCase> cases) {
  for (const ShortNameCase& c : cases) EXPECT_EQ(short_function_name(demangle(c.mangled)), c.short_name) << c.mangled;
}

TEST(ShortFunctionName, DropsParametersReturnTypesAndTemplateArguments) {
  expect_short_names({
      // void std::vector<std::string*, std::allocator<std::string*> >::_M_realloc_insert<std::string*>(
      //   __gnu_cxx::__normal_iterator<...>, std::string*&&): 430 characters.
      {"_ZNSt6vectorIPNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESaIS6_EE17_M_realloc_"
       "insertIJS6_EEEvN9__gnu_cxx17__normal_iteratorIPS6_S8_EEDpOT_",
       "std::vector<...>::_M_realloc_insert<...>"},
      {"_Z4makeI5MoneyESt6vectorIT_SaIS2_EES2_", "make<...>"},  // a template's return type
      {"_ZN3foo3barEv", "foo::bar"},
      {"_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE4sizeEv", "std::__cxx11::basic_string<...>::size"},
      {"_ZN12_GLOBAL__N_16helperEi", "(anonymous namespace)::helper"},
      {"_Z6taggedB5cxx11v", "tagged[abi:cxx11]"},
      {"_ZN7DerivedD2Ev", "Derived::~Derived"},
  });
  EXPECT_EQ(short_function_name("Foo::~Foo() [clone .cold]"), "Foo::~Foo");
}

TEST(ShortFunctionName, KeepsWhatNamesTheFunction) {
  expect_short_names({
      // Lambdas keep their number; the function they are in loses its parameters.
      {"_ZZ3usevENKUliE_clEi", "use::{lambda(int)#1}::operator()"},
      {"_ZNSt17_Function_handlerIFiiEZ3usevEUliE_E9_M_invokeERKSt9_Any_dataOi", "std::_Function_handler<...>::_M_invoke"},
      // Operators: their '<' and '(' are not a template's or a parameter list's.
      {"_ZNK5MoneyltERKS_", "Money::operator<"},
      {"_ZStlsISt11char_traitsIcEERSt13basic_ostreamIcT_ES5_PKc", "std::operator<< <...>"},
      {"_ZNKSt4lessIiEclERKiS2_", "std::less<...>::operator()"},
      {"_ZN3FooptEv", "Foo::operator->"},
      {"_ZN3FoossERKS_", "Foo::operator<=>"},
      {"_ZN3FooaSIiEERS_T_", "Foo::operator=<...>"},
      {"_ZnamRKSt9nothrow_t", "operator new[]"},
      {"_ZdlPv", "operator delete"},
      {"_Zli3_kmy", "operator\"\" _km"},
      // A conversion operator's type is its name, spaces and all.
      {"_ZNK5MoneycvmEv", "Money::operator unsigned long"},
      {"_ZNK5MoneycvSt6vectorIiSaIiEEEv", "Money::operator std::vector<...>"},
      // What a special name is about stays in front of it; a data name keeps its spaces.
      {"_ZThn8_N7Derived1gEv", "non-virtual thunk to Derived::g"},
      {"_ZGVZ3foovE1x", "guard variable for foo::x"},
      {"_ZTIh", "typeinfo for unsigned char"},
  });
}

TEST(ShortFunctionName, LeavesOtherNamesAlone) {
  EXPECT_EQ(short_function_name("rb_newobj"), "rb_newobj");
  EXPECT_EQ(short_function_name("leak_objects"), "leak_objects");
  EXPECT_EQ(short_function_name(""), "");
  EXPECT_EQ(short_function_name("broken<int"), "broken<int");    // unbalanced: as it is
  EXPECT_EQ(short_function_name("broken(int"), "broken(int");
}

}  // namespace
}  // namespace memprof::elf
