// The hooked program itself, built in one variant per executable (PIE, non-PIE, -fno-plt,
// BIND_NOW + RELRO, -O0): its own calls to fixture_add go through its own GOT slot.
// EXPECT_JUMP_SLOT and EXPECT_PROTECTION say what the variant's slot must look like.
#include <dlfcn.h>
#include <sys/mman.h>

#include <atomic>

#include <gtest/gtest.h>

#include "core/hook/got_hook.h"
#include "fixtures/target.h"
#include "test_support.h"

namespace memprof::hook {
namespace {

std::atomic<long> hits{0};
int (*real_add)(int, int) = nullptr;
int counting_add(int a, int b) {
  hits.fetch_add(1, std::memory_order_relaxed);
  return real_add(a, b);
}

// Kept out of line so every variant really calls fixture_add from here.
__attribute__((noinline)) int program_calls_add(int a, int b) { return fixture_add(a, b); }

// This program embeds memprof_hook, so its own object is only patched when a filter asks.
GotHookOptions only_this_program() {
  return {.object_filter = [](std::string_view path) { return path == testing::program_path(); },
          .publish_original = reinterpret_cast<void**>(&real_add)};
}

TEST(GotProgram, HooksTheProgramsOwnSlot) {
  hits = 0;
  unsigned long reached_before = fixture_add_calls();
  std::vector<void**> expected = testing::got_slots_from_file(testing::program_path(), "fixture_add");
  ASSERT_EQ(expected.size(), 1u);
  void* bound = *expected[0];
  int protection = testing::protection_of(expected[0]);
  EXPECT_EQ(protection, EXPECT_PROTECTION);

  auto hook = GotHook::install("fixture_add", reinterpret_cast<void*>(&counting_add), only_this_program());
  ASSERT_TRUE(hook.ok()) << hook.message();
  ASSERT_EQ((*hook)->patched_slots(), 1u);
  GotSlot slot = (*hook)->slots().front();
  EXPECT_EQ(slot.address, expected[0]);
  EXPECT_EQ(slot.previous, bound);
  EXPECT_EQ(slot.object, testing::program_path());
  EXPECT_EQ(slot.jump_slot, EXPECT_JUMP_SLOT != 0);
  EXPECT_EQ(*slot.address, reinterpret_cast<void*>(&counting_add));
  EXPECT_EQ(testing::protection_of(slot.address), protection);

  for (int i = 0; i < 7; ++i) EXPECT_EQ(program_calls_add(i, i), 2 * i);
  EXPECT_EQ(hits.load(), 7);
  EXPECT_EQ(fixture_add_calls() - reached_before, 7u);

  void* handle = ::dlopen("libhook_target.so", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr);
  EXPECT_EQ((*hook)->original(), ::dlsym(handle, "fixture_add"));
  ::dlclose(handle);

  hook->reset();
  EXPECT_EQ(*expected[0], bound);  // the exact previous value (a PLT stub when still lazy)
  EXPECT_EQ(testing::protection_of(expected[0]), protection);
  EXPECT_EQ(program_calls_add(1, 2), 3);
  EXPECT_EQ(hits.load(), 7);
}

TEST(GotProgram, DefaultFilterSkipsTheHookingLibrarysOwnObject) {
  auto hook = GotHook::install("fixture_add", reinterpret_cast<void*>(&counting_add));
  ASSERT_FALSE(hook.ok());
  EXPECT_EQ(hook.message(), "no GOT slot for symbol 'fixture_add' in any loaded object");
}

}  // namespace
}  // namespace memprof::hook
