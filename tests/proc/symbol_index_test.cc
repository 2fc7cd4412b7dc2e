#include "core/proc/symbol_index.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>

#include "core/proc/maps.h"

namespace memprof::proc {
namespace {

TEST(SymbolIndexSelf, NameAndAddressLookupsInADlopenedLibrary) {
  void* handle = dlopen(TARGET_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto function = reinterpret_cast<uint64_t>(dlsym(handle, "proc_target_function"));
  auto data = reinterpret_cast<uint64_t>(dlsym(handle, "proc_target_data"));
  auto index = SymbolIndex::for_self();
  ASSERT_TRUE(index.ok()) << index.message();

  auto found = index->find("proc_target_function");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found.front().address, function);
  EXPECT_EQ(found.front().object->object.path, TARGET_LIB);
  auto variable = index->find("proc_target_data");
  ASSERT_EQ(variable.size(), 1u);
  EXPECT_EQ(variable.front().address, data);

  auto inside = index->lookup(function + 2);
  ASSERT_TRUE(inside.has_value());
  ASSERT_NE(inside->symbol, nullptr);
  EXPECT_EQ(inside->symbol->name, "proc_target_function");
  EXPECT_EQ(inside->offset, 2u);
  EXPECT_EQ(inside->object->object.path, TARGET_LIB);
  EXPECT_EQ(index->describe(function + 2), fmt::format("proc_target_function+0x2 ({})", TARGET_LIB));
  EXPECT_TRUE(index->find("memprof_no_such_symbol").empty());
  dlclose(handle);
}

TEST(SymbolIndexSelf, HeapAddressesBelongToNoObject) {
  auto index = SymbolIndex::for_self();
  ASSERT_TRUE(index.ok());
  auto heap = std::make_unique<char[]>(1 << 20);  // large enough to be its own mmap
  auto address = reinterpret_cast<uint64_t>(heap.get());
  EXPECT_FALSE(index->lookup(address).has_value());
  EXPECT_EQ(index->describe(address), fmt::format("{:#x}", address));
}

TEST(SymbolIndexSelf, VdsoSymbolsFromMemory) {
  auto index = SymbolIndex::for_self();
  ASSERT_TRUE(index.ok());
  EXPECT_TRUE(index->warnings().empty()) << index->warnings().front();
  auto found = index->find("__vdso_clock_gettime");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found.front().object->object.is_vdso);
  auto maps = read_maps(::getpid());
  ASSERT_TRUE(maps.ok());
  bool inside_vdso = false;
  for (const auto& entry : *maps) {
    if (entry.path == "[vdso]" && entry.contains(found.front().address)) inside_vdso = true;
  }
  EXPECT_TRUE(inside_vdso);
}

}  // namespace
}  // namespace memprof::proc
