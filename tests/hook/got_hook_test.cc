// GOT hooks on libraries called through lazy PLT slots, BIND_NOW + RELRO slots and -fno-plt
// GLOB_DAT slots, a library opened after the hook, and versioned symbols.
#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <map>

#include <gtest/gtest.h>

#include "core/hook/got_hook.h"
#include "core/hook/loaded_object.h"
#include "core/hook/typed_hook.h"
#include "fixtures/target.h"
#include "test_support.h"

extern "C" {
int caller_lazy_add(int, int);
int caller_now_add(int, int);
int caller_noplt_add(int, int);
int caller_lazy_mul(int, int);
int caller_lazy_versioned_default(void);
int caller_lazy_versioned_old(void);
int caller_now_versioned_old(void);
int caller_noplt_versioned_old(void);
}

namespace memprof::hook {
namespace {

using testing::base_name;
using testing::data_segments;
using testing::protection_of;

std::atomic<long> add_hits{0};
int (*real_add)(int, int) = nullptr;
int counting_add(int a, int b) {
  add_hits.fetch_add(1, std::memory_order_relaxed);
  return real_add(a, b);
}

std::atomic<long> mul_hits{0};
int (*real_mul)(int, int) = nullptr;
int counting_mul(int a, int b) {
  mul_hits.fetch_add(1, std::memory_order_relaxed);
  return real_mul(a, b);
}

std::atomic<long> versioned_hits{0};
int (*real_versioned)() = nullptr;
int counting_versioned() {
  versioned_hits.fetch_add(1, std::memory_order_relaxed);
  return real_versioned();
}

class GotHookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    add_hits = 0;
    mul_hits = 0;
    versioned_hits = 0;
  }
  static Result<std::unique_ptr<GotHook>> hook_add(bool follow_dlopen = true) {
    return GotHook::install("fixture_add", reinterpret_cast<void*>(&counting_add),
                            {.follow_dlopen = follow_dlopen,
                             .publish_original = reinterpret_cast<void**>(&real_add)});
  }
};

TEST_F(GotHookTest, PatchesLazyRelroAndNoPltCallersAndRunsTheOriginal) {
  unsigned long reached_before = fixture_add_calls();
  auto hook = hook_add();
  ASSERT_TRUE(hook.ok()) << hook.message();

  std::map<std::string, bool> kinds;  // object -> JUMP_SLOT?
  for (const auto& slot : (*hook)->slots()) kinds[base_name(slot.object)] = slot.jump_slot;
  EXPECT_EQ(kinds, (std::map<std::string, bool>{{"libhook_caller_lazy.so", true},
                                                 {"libhook_caller_now.so", true},
                                                 {"libhook_caller_noplt.so", false}}));
  EXPECT_EQ((*hook)->patched_slots(), 3u);
  std::vector<void**> reported, expected;
  for (const auto& slot : (*hook)->slots()) reported.push_back(slot.address);
  for (const char* library : {"libhook_caller_lazy.so", "libhook_caller_now.so", "libhook_caller_noplt.so"})
    for (void** slot : testing::got_slots_from_file(library, "fixture_add")) expected.push_back(slot);
  std::sort(reported.begin(), reported.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(reported, expected);

  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(caller_lazy_add(i, 1), i + 1);
    EXPECT_EQ(caller_now_add(i, 2), i + 2);
    EXPECT_EQ(caller_noplt_add(i, 3), i + 3);
  }
  EXPECT_EQ(add_hits.load(), 30);
  EXPECT_EQ(fixture_add_calls() - reached_before, 30u);  // every hooked call ran the original

  hook->reset();
  EXPECT_EQ(caller_now_add(4, 5), 9);
  EXPECT_EQ(add_hits.load(), 30);
  EXPECT_EQ(fixture_add_calls() - reached_before, 31u);
}

TEST_F(GotHookTest, OriginalIsTheDefinitionNeverAPltStub) {
  auto hook = hook_add();
  ASSERT_TRUE(hook.ok()) << hook.message();
  void* handle = ::dlopen("libhook_target.so", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr);
  EXPECT_EQ((*hook)->original(), ::dlsym(handle, "fixture_add"));
  EXPECT_EQ(real_add, reinterpret_cast<int (*)(int, int)>((*hook)->original()));
  auto owner = object_containing((*hook)->original());
  ASSERT_TRUE(owner.ok());
  EXPECT_EQ(base_name(owner->path), "libhook_target.so");
  ::dlclose(handle);
}

TEST_F(GotHookTest, UninstallRestoresExactBytesAndProtections) {
  const char* libraries[] = {"libhook_caller_lazy.so", "libhook_caller_now.so",
                             "libhook_caller_noplt.so"};
  std::vector<std::vector<testing::Snapshot>> before;
  for (const char* library : libraries) {
    before.push_back(data_segments(library));
    ASSERT_FALSE(before.back().empty()) << library;
  }
  {
    auto hook = hook_add();
    ASSERT_TRUE(hook.ok()) << hook.message();
    EXPECT_EQ(caller_lazy_add(1, 1), 2);
    EXPECT_EQ(caller_noplt_add(1, 1), 2);
    bool changed = false;
    for (size_t i = 0; i < std::size(libraries); ++i) changed |= data_segments(libraries[i]) != before[i];
    EXPECT_TRUE(changed);
  }
  for (size_t i = 0; i < std::size(libraries); ++i)
    EXPECT_EQ(data_segments(libraries[i]), before[i]) << libraries[i];
}

TEST_F(GotHookTest, RelroSlotStaysReadOnlyAroundTheWrite) {
  auto hook = hook_add();
  ASSERT_TRUE(hook.ok()) << hook.message();
  void** relro_slot = nullptr;
  for (const auto& slot : (*hook)->slots())
    if (base_name(slot.object) == "libhook_caller_now.so") relro_slot = slot.address;
  ASSERT_NE(relro_slot, nullptr);
  EXPECT_EQ(protection_of(relro_slot), PROT_READ);
  EXPECT_EQ(*relro_slot, reinterpret_cast<void*>(&counting_add));
  hook->reset();
  EXPECT_EQ(protection_of(relro_slot), PROT_READ);
  EXPECT_EQ(*relro_slot, real_add);  // BIND_NOW: the slot held the resolved function
}

TEST_F(GotHookTest, FollowsLibrariesOpenedLater) {
  auto hook = hook_add();
  ASSERT_TRUE(hook.ok()) << hook.message();
  void* late = ::dlopen(HOOK_LATE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(late, nullptr) << ::dlerror();
  auto late_add = reinterpret_cast<int (*)(int, int)>(::dlsym(late, "late_add"));
  ASSERT_NE(late_add, nullptr);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(late_add(i, 10), i + 10);
  EXPECT_EQ(add_hits.load(), 5);
  EXPECT_EQ((*hook)->patched_slots(), 4u);
  EXPECT_TRUE((*hook)->follow_errors().empty());

  ASSERT_EQ(::dlclose(late), 0);
  EXPECT_EQ((*hook)->patched_slots(), 3u);  // the unloaded library's slot is forgotten

  late = ::dlopen(HOOK_LATE_PATH, RTLD_NOW | RTLD_LOCAL);  // loaded again: hooked again
  ASSERT_NE(late, nullptr) << ::dlerror();
  late_add = reinterpret_cast<int (*)(int, int)>(::dlsym(late, "late_add"));
  EXPECT_EQ(late_add(1, 1), 2);
  EXPECT_EQ(add_hits.load(), 6);
  hook->reset();
  EXPECT_EQ(late_add(1, 1), 2);
  EXPECT_EQ(add_hits.load(), 6);
  ::dlclose(late);
}

TEST_F(GotHookTest, DoesNotFollowDlopenWhenAskedNotTo) {
  auto hook = hook_add(/*follow_dlopen=*/false);
  ASSERT_TRUE(hook.ok()) << hook.message();
  void* late = ::dlopen(HOOK_LATE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(late, nullptr) << ::dlerror();
  auto late_add = reinterpret_cast<int (*)(int, int)>(::dlsym(late, "late_add"));
  EXPECT_EQ(late_add(2, 2), 4);
  EXPECT_EQ(add_hits.load(), 0);
  EXPECT_EQ((*hook)->patched_slots(), 3u);
  ::dlclose(late);
}

TEST_F(GotHookTest, SeveralHooksAtOnce) {
  auto add = hook_add();
  auto mul = GotHook::install("fixture_mul", reinterpret_cast<void*>(&counting_mul),
                              {.publish_original = reinterpret_cast<void**>(&real_mul)});
  ASSERT_TRUE(add.ok()) << add.message();
  ASSERT_TRUE(mul.ok()) << mul.message();
  EXPECT_EQ(caller_lazy_add(2, 3), 5);
  EXPECT_EQ(caller_lazy_mul(2, 3), 6);
  EXPECT_EQ(caller_lazy_mul(4, 3), 12);
  EXPECT_EQ(add_hits.load(), 1);
  EXPECT_EQ(mul_hits.load(), 2);
  add->reset();
  EXPECT_EQ(caller_lazy_mul(1, 3), 3);
  EXPECT_EQ(mul_hits.load(), 3);
}

TEST_F(GotHookTest, VersionedSymbolNeedsItsVersionWhenVersionsDiffer) {
  auto all = GotHook::install("fixture_versioned", reinterpret_cast<void*>(&counting_versioned));
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.message(),
            "symbol 'fixture_versioned' is bound to several versions (VERS_1, VERS_2) that are "
            "different functions: hook each as 'fixture_versioned@VERSION'");

  auto old = GotHook::install("fixture_versioned@VERS_1",
                              reinterpret_cast<void*>(&counting_versioned),
                              {.publish_original = reinterpret_cast<void**>(&real_versioned)});
  ASSERT_TRUE(old.ok()) << old.message();
  EXPECT_EQ((*old)->patched_slots(), 3u);  // one caller library per variant binds VERS_1
  EXPECT_EQ(caller_lazy_versioned_old(), 1);    // the original is the VERS_1 definition
  EXPECT_EQ(caller_now_versioned_old(), 1);
  EXPECT_EQ(caller_noplt_versioned_old(), 1);
  EXPECT_EQ(caller_lazy_versioned_default(), 2);  // bound to VERS_2: not hooked
  EXPECT_EQ(versioned_hits.load(), 3);
}

TEST_F(GotHookTest, ErrorsAreClear) {
  auto unknown = GotHook::install("no_such_symbol_xyz", reinterpret_cast<void*>(&counting_add));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.message(), "no GOT slot for symbol 'no_such_symbol_xyz' in any loaded object");

  auto unknown_version = GotHook::install("fixture_add@VERS_9", reinterpret_cast<void*>(&counting_add));
  ASSERT_FALSE(unknown_version.ok());
  EXPECT_EQ(unknown_version.message(),
            "no GOT slot for symbol 'fixture_add@VERS_9' in any loaded object");

  auto null = GotHook::install("fixture_add", nullptr);
  ASSERT_FALSE(null.ok());
  EXPECT_EQ(null.message(), "null replacement for symbol 'fixture_add'");

  auto first = hook_add();
  ASSERT_TRUE(first.ok()) << first.message();
  auto second = GotHook::install("fixture_add", reinterpret_cast<void*>(&counting_mul));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.message(), "symbol 'fixture_add' is already hooked by another GotHook ('fixture_add')");

  auto follower = GotHook::install("dlclose", reinterpret_cast<void*>(&counting_mul));
  ASSERT_FALSE(follower.ok());
  EXPECT_EQ(follower.message(),
            "symbol 'dlclose' is hooked by the dlopen follower while a GotHook follows dlopen");

  auto none = GotHook::find_original("no_such_symbol_xyz");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.message(), "symbol 'no_such_symbol_xyz' is not defined by any loaded object");
}

int typed_counting_add(int a, int b) {
  add_hits.fetch_add(1, std::memory_order_relaxed);
  return real_add(a, b);
}

TEST_F(GotHookTest, TypedHookPublishesTheOriginalFirst) {
  real_add = nullptr;
  auto hook = MEMPROF_GOT_HOOK(fixture_add, typed_counting_add, &real_add);
  ASSERT_TRUE(hook.ok()) << hook.message();
  EXPECT_EQ(real_add, hook->original());
  EXPECT_EQ(caller_now_add(20, 22), 42);
  EXPECT_EQ(add_hits.load(), 1);
}

TEST_F(GotHookTest, FindsMallocInLibc) {
  auto original = GotHook::find_original("malloc");
  ASSERT_TRUE(original.ok()) << original.message();
  EXPECT_EQ(*original, ::dlsym(RTLD_DEFAULT, "malloc"));
  // An indirect function is resolved like the loader does, never returned as its resolver.
  auto strlen_impl = GotHook::find_original("strlen");
  ASSERT_TRUE(strlen_impl.ok()) << strlen_impl.message();
  EXPECT_EQ(*strlen_impl, ::dlsym(RTLD_DEFAULT, "strlen"));
}

}  // namespace
}  // namespace memprof::hook
