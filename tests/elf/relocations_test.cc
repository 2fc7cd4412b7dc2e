#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>

#include <algorithm>
#include <set>

#include "core/elf/elf_file.h"
#include "elf/test_util.h"

namespace memprof::elf {
namespace {

std::vector<Relocation> of_type(const std::vector<Relocation>& all, uint32_t type) {
  std::vector<Relocation> found;
  std::copy_if(all.begin(), all.end(), std::back_inserter(found),
               [&](const Relocation& r) { return r.type == type; });
  return found;
}

TEST(Relocations, KindsAndSymbolsOfTheFixtureLibrary) {
  auto file = ElfFile::open(FIXTURE_LIB_LAZY);
  ASSERT_TRUE(file.ok());
  auto relocations = file->relocations();
  ASSERT_TRUE(relocations.ok()) << relocations.message();
  auto symbols = *file->dynamic_symbols();

  // PLT calls: exactly puts and strlen, all from .rela.plt.
  auto slots = of_type(*relocations, R_X86_64_JUMP_SLOT);
  std::set<std::string_view> slot_names;
  for (const auto& r : slots) {
    EXPECT_TRUE(r.plt);
    slot_names.insert(r.symbol_name);
  }
  EXPECT_EQ(slots.size(), 2u);
  EXPECT_EQ(slot_names, (std::set<std::string_view>{"puts", "strlen"}));

  // The GOT load of stdout.
  auto glob_dat = of_type(*relocations, R_X86_64_GLOB_DAT);
  EXPECT_EQ(std::count_if(glob_dat.begin(), glob_dat.end(),
                          [](const Relocation& r) { return r.symbol_name == "stdout" && !r.plt; }),
            1);

  // `fixture_allocator = malloc`: an absolute 64-bit relocation at the variable's address.
  auto absolute = of_type(*relocations, R_X86_64_64);
  ASSERT_EQ(absolute.size(), 1u);
  EXPECT_EQ(absolute.front().symbol_name, "malloc");
  EXPECT_EQ(absolute.front().offset, testing::only_symbol(symbols, "fixture_allocator").value);

  // `fixture_local_pointer = &fixture_local_value`: RELATIVE, addend = the address of a 42.
  uint64_t pointer = testing::only_symbol(symbols, "fixture_local_pointer").value;
  auto relative = of_type(*relocations, R_X86_64_RELATIVE);
  auto it = std::find_if(relative.begin(), relative.end(),
                         [&](const Relocation& r) { return r.offset == pointer; });
  ASSERT_NE(it, relative.end());
  EXPECT_EQ(it->symbol_index, 0u);
  EXPECT_TRUE(it->symbol_name.empty());
  auto target = file->bytes_at_address(static_cast<uint64_t>(it->addend), 4);
  ASSERT_TRUE(target.ok()) << target.message();
  int value = 0;
  std::memcpy(&value, target->data(), 4);
  EXPECT_EQ(value, 42);
}

// With -z now the loader fills every JUMP_SLOT before dlopen returns: each slot found by the
// parser must hold the address of the function it names.
TEST(Relocations, BindNowSlotsHoldTheResolvedFunctions) {
  void* handle = dlopen(FIXTURE_LIB_NOW, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  link_map* map = nullptr;
  ASSERT_EQ(dlinfo(handle, RTLD_DI_LINKMAP, &map), 0);
  auto file = ElfFile::open(FIXTURE_LIB_NOW);
  ASSERT_TRUE(file.ok());
  auto relocations = file->relocations();
  ASSERT_TRUE(relocations.ok());
  int checked = 0;
  for (const auto& r : of_type(*relocations, R_X86_64_JUMP_SLOT)) {
    uint64_t slot_value = 0;
    std::memcpy(&slot_value, reinterpret_cast<const void*>(map->l_addr + r.offset), 8);
    std::string name(r.symbol_name);
    EXPECT_EQ(slot_value, reinterpret_cast<uint64_t>(dlsym(RTLD_DEFAULT, name.c_str()))) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 2);
  dlclose(handle);
}

}  // namespace
}  // namespace memprof::elf
