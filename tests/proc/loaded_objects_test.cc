#include "core/proc/loaded_objects.h"

#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>

#include <algorithm>
#include <filesystem>

namespace memprof::proc {
namespace {

TEST(SelfObjects, MainExecutableFirstThenLibrariesAndVdso) {
  auto objects = self_objects();
  ASSERT_GE(objects.size(), 3u);
  EXPECT_TRUE(objects.front().is_main);
  EXPECT_EQ(objects.front().path, std::filesystem::read_symlink("/proc/self/exe").string());
  EXPECT_EQ(std::count_if(objects.begin(), objects.end(), [](const LoadedObject& o) { return o.is_main; }), 1);
  EXPECT_EQ(std::count_if(objects.begin(), objects.end(), [](const LoadedObject& o) { return o.is_vdso; }), 1);
  EXPECT_TRUE(std::any_of(objects.begin(), objects.end(), [](const LoadedObject& o) {
    return o.path.ends_with("/libc.so.6");
  }));
  for (const auto& object : objects) {
    EXPECT_TRUE(std::any_of(object.segments.begin(), object.segments.end(),
                            [](const elf::Segment& s) { return s.type == PT_LOAD; }))
        << object.path;
  }
}

TEST(SelfObjects, DlopenedLibraryWithTheLoadersBias) {
  void* handle = dlopen(TARGET_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  link_map* map = nullptr;
  ASSERT_EQ(dlinfo(handle, RTLD_DI_LINKMAP, &map), 0);
  auto objects = self_objects();
  auto it = std::find_if(objects.begin(), objects.end(),
                         [](const LoadedObject& o) { return o.path == TARGET_LIB; });
  ASSERT_NE(it, objects.end());
  EXPECT_EQ(it->load_bias, map->l_addr);
  EXPECT_EQ(it->dynamic, reinterpret_cast<uint64_t>(map->l_ld));
  EXPECT_FALSE(it->is_main || it->is_vdso);
  dlclose(handle);
}

// dlopen("./lib.so") leaves the loader a relative name, which names nothing once the process
// has moved to another directory (servers chdir): the object is named from the root.
TEST(SelfObjects, LibraryDlopenedByARelativePathIsNamedFromTheRoot) {
  const std::filesystem::path library = std::filesystem::canonical(TARGET_LIB);
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(library.parent_path());
  void* handle = dlopen(("./" + library.filename().string()).c_str(), RTLD_NOW | RTLD_LOCAL);
  std::filesystem::current_path("/");
  std::vector<LoadedObject> objects = self_objects();
  std::filesystem::current_path(before);
  ASSERT_NE(handle, nullptr) << dlerror();
  link_map* map = nullptr;
  ASSERT_EQ(dlinfo(handle, RTLD_DI_LINKMAP, &map), 0);
  auto it = std::find_if(objects.begin(), objects.end(),
                         [&](const LoadedObject& o) { return o.load_bias == map->l_addr && !o.is_main; });
  ASSERT_NE(it, objects.end());
  EXPECT_EQ(it->path, library.string());
  EXPECT_EQ(it->file, library.string());
  dlclose(handle);
}

}  // namespace
}  // namespace memprof::proc
