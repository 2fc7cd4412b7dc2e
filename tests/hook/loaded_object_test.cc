// The loaded-object snapshot while another thread loads and unloads a library: dlclose unmaps
// the library's pages, and a snapshot that read an object's dynamic section after the loader
// let go of its list read unmapped memory (a traced program that loads and unloads libbz2
// 2,000 times a second lost its agent thread to SIGSEGV twice in about 45 trace starts).
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "core/hook/loaded_object.h"

namespace memprof::hook {
namespace {

constexpr auto kChurn = std::chrono::seconds(3);

// Loads and unloads `path` until stopped; counts the rounds.
class LoadUnloadLoop {
 public:
  explicit LoadUnloadLoop(const char* path)
      : thread_([this, path] {
          while (!stop_.load(std::memory_order_relaxed)) {
            void* handle = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (handle == nullptr) break;
            ::dlclose(handle);
            rounds_.fetch_add(1, std::memory_order_relaxed);
          }
        }) {}
  ~LoadUnloadLoop() {
    stop_ = true;
    thread_.join();
  }
  unsigned long rounds() const { return rounds_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<unsigned long> rounds_{0};
  std::thread thread_;
};

bool holds_library(const std::vector<LoadedObject>& objects) {
  return std::any_of(objects.begin(), objects.end(),
                     [](const LoadedObject& o) { return o.path == HOOK_CODE_O2_PATH; });
}

TEST(LoadedObjects, SnapshotsTakenWhileAnotherThreadUnloadsALibrary) {
  LoadUnloadLoop loop(HOOK_CODE_O2_PATH);
  unsigned long snapshots = 0, with_library = 0;
  const auto end = std::chrono::steady_clock::now() + kChurn;
  while (std::chrono::steady_clock::now() < end) {
    auto objects = loaded_objects();
    ASSERT_TRUE(objects.ok()) << objects.message();
    ++snapshots;
    if (!holds_library(*objects)) continue;
    ++with_library;
    // Every object was read whole: an object read while it was unloaded would have a problem
    // (or, before, a SIGSEGV).
    for (const auto& object : *objects) EXPECT_EQ(object.problem, "") << object.path;
  }
  EXPECT_GT(loop.rounds(), 100u);
  EXPECT_GT(with_library, 0u) << snapshots << " snapshots never saw the library loaded";
}

// is_loaded read the dynamic section of every object at the key's bias.
TEST(LoadedObjects, IsLoadedAskedWhileAnotherThreadUnloadsALibrary) {
  std::optional<ObjectKey> library;
  {
    void* handle = ::dlopen(HOOK_CODE_O2_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << ::dlerror();
    auto key = object_key_containing(::dlsym(handle, "code_square_calls"));
    ASSERT_TRUE(key.ok()) << key.message();
    EXPECT_TRUE(is_loaded(*key));
    library = *key;
    ::dlclose(handle);
  }
  EXPECT_FALSE(is_loaded(*library));
  LoadUnloadLoop loop(HOOK_CODE_O2_PATH);
  unsigned long asked = 0, loaded = 0;
  const auto end = std::chrono::steady_clock::now() + kChurn;
  while (std::chrono::steady_clock::now() < end) {
    ++asked;
    loaded += is_loaded(*library) ? 1 : 0;  // the library comes back at the same address
  }
  EXPECT_GT(loop.rounds(), 100u);
  EXPECT_GT(loaded, 0u) << asked;
  EXPECT_LT(loaded, asked);
}

TEST(LoadedObjects, KeyOfAnAddressIsTheSnapshotsKey) {
  auto objects = loaded_objects();
  ASSERT_TRUE(objects.ok()) << objects.message();
  for (const auto& object : *objects) {
    if (object.segments.empty()) continue;
    auto key = object_key_containing(reinterpret_cast<const void*>(object.segments.back().end - 1));
    ASSERT_TRUE(key.ok()) << key.message();
    EXPECT_EQ(key->bias, object.bias) << object.path;
    EXPECT_EQ(key->dynamic, object.dynamic) << object.path;
  }
  int on_the_stack = 0;
  EXPECT_FALSE(object_key_containing(&on_the_stack).ok());
}

}  // namespace
}  // namespace memprof::hook
