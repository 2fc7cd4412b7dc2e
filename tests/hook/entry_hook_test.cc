// Entry hooks on the -O0 and -O2 builds of the code fixture: every call seen, the relocated
// original callable, exact bytes and protections back after uninstall, and refusals.
#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "code_library.h"
#include "core/hook/call_site_hook.h"
#include "core/hook/entry_hook.h"
#include "core/hook/typed_hook.h"
#include "test_support.h"

namespace memprof::hook {
namespace {

std::atomic<long> square_hits{0};
int (*real_square)(int) = nullptr;
int counting_square(int x) {
  square_hits.fetch_add(1, std::memory_order_relaxed);
  return real_square(x);
}

std::atomic<long> bias_hits{0};
int (*real_plus_bias)(int) = nullptr;
int counting_plus_bias(int x) {
  bias_hits.fetch_add(1, std::memory_order_relaxed);
  return real_plus_bias(x);
}

int replacement_for_refusals(int) { return -1; }

class EntryHookTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(code.loaded()) << code.error();
    square_hits = 0;
    bias_hits = 0;
  }
  testing::CodeLibrary code{GetParam()};
};

TEST_P(EntryHookTest, EveryCallIsSeenAndTheOriginalRuns) {
  auto* square = code.function<int(int)>("code_square");
  int expected = code.three_calls(3);  // 10 + 2*17 + 3*26
  ASSERT_EQ(expected, 122);
  unsigned long reached_before = code.square_calls();

  auto hook = EntryHook::install(reinterpret_cast<void*>(square), reinterpret_cast<void*>(&counting_square),
                                 {.publish_original = reinterpret_cast<void**>(&real_square)});
  ASSERT_TRUE(hook.ok()) << hook.message();
  EXPECT_EQ(real_square, (*hook)->original());
  EXPECT_GE((*hook)->displaced_bytes(), 5u);

  EXPECT_EQ(code.three_calls(3), expected);
  EXPECT_EQ(square(4), 17);  // an indirect call enters the hook too
  EXPECT_EQ(square_hits.load(), 4);
  EXPECT_EQ(code.square_calls() - reached_before, 4u);  // through the relocated prologue
  EXPECT_EQ(real_square(5), 26);
}

TEST_P(EntryHookTest, UninstallRestoresExactBytesAndProtection) {
  auto target = reinterpret_cast<uintptr_t>(code.address("code_square"));
  auto before = testing::snapshot(target, 32);
  EXPECT_EQ(before.protections, std::vector<int>(before.protections.size(), PROT_READ | PROT_EXEC));
  {
    auto hook = EntryHook::install(reinterpret_cast<void*>(target), reinterpret_cast<void*>(&counting_square),
                                   {.publish_original = reinterpret_cast<void**>(&real_square)});
    ASSERT_TRUE(hook.ok()) << hook.message();
    auto during = testing::snapshot(target, 32);
    EXPECT_EQ(during.bytes[0], 0xe9);  // jmp rel32
    EXPECT_TRUE(std::equal(during.bytes.begin() + 5, during.bytes.end(), before.bytes.begin() + 5));
    EXPECT_EQ(during.protections, before.protections);
    EXPECT_EQ((*hook)->saved_bytes(), std::vector<uint8_t>(before.bytes.begin(), before.bytes.begin() + 5));
  }
  EXPECT_EQ(testing::snapshot(target, 32), before);
  EXPECT_EQ(code.three_calls(1), 2 + 2 * 5 + 3 * 10);
  EXPECT_EQ(square_hits.load(), 0);
}

TEST_P(EntryHookTest, ReinstallingReusesTheRetainedTrampoline) {
  void* target = code.address("code_square");
  void* first = nullptr;
  for (int i = 0; i < 3; ++i) {
    auto hook = EntryHook::install(target, reinterpret_cast<void*>(&counting_square),
                                   {.publish_original = reinterpret_cast<void**>(&real_square)});
    ASSERT_TRUE(hook.ok()) << hook.message();
    if (i == 0) first = (*hook)->original();
    EXPECT_EQ((*hook)->original(), first);
    EXPECT_EQ(code.three_calls(3), 122);
  }
  EXPECT_EQ(square_hits.load(), 9);
}

TEST_P(EntryHookTest, RipRelativePrologueIsRelocated) {
  auto* plus_bias = code.function<int(int)>("code_plus_bias");
  auto hook = EntryHook::install(reinterpret_cast<void*>(plus_bias), reinterpret_cast<void*>(&counting_plus_bias),
                                 {.publish_original = reinterpret_cast<void**>(&real_plus_bias)});
  ASSERT_TRUE(hook.ok()) << hook.message();
  EXPECT_EQ(code.call_plus_bias(5), 24);  // (5 + 7) * 2: the original read code_bias correctly
  EXPECT_EQ(real_plus_bias(1), 8);
  EXPECT_EQ(bias_hits.load(), 1);
}

TEST_P(EntryHookTest, TypedHook) {
  auto* square = code.function<int(int)>("code_square");
  real_square = nullptr;
  auto hook = TypedEntryHook<int(int)>::install(square, &counting_square, &real_square);
  ASSERT_TRUE(hook.ok()) << hook.message();
  EXPECT_EQ(hook->original(), real_square);
  EXPECT_EQ(square(3), 10);
  EXPECT_EQ(square_hits.load(), 1);
}

std::atomic<long> countdown_hits{0};
int (*real_countdown)(int) = nullptr;
int counting_countdown(int n) {
  countdown_hits.fetch_add(1, std::memory_order_relaxed);
  return real_countdown(n);
}

TEST_P(EntryHookTest, ARecursiveFunctionIsHookedAndEveryCallOfItselfIsSeen) {
  // Before: its call to its own first byte was taken for a branch into the displaced bytes, and
  // the entry was refused (`memprof trace` saw 10 of 3,010 calls, through the GOT alone).
  countdown_hits = 0;
  auto hook = EntryHook::install(code.address("code_countdown"), reinterpret_cast<void*>(&counting_countdown),
                                 {.publish_original = reinterpret_cast<void**>(&real_countdown)});
  ASSERT_TRUE(hook.ok()) << hook.message();
  EXPECT_EQ(code.function<int(int)>("code_countdown")(10), 10);
  EXPECT_EQ(countdown_hits.load(), 11);  // the first call and its ten recursive ones
}

TEST_P(EntryHookTest, RefusesWhatCannotMove) {
  auto refuse = [&](const char* name) {
    auto hook = EntryHook::install(code.address(name), reinterpret_cast<void*>(&replacement_for_refusals));
    EXPECT_FALSE(hook.ok()) << name;
    return hook.ok() ? std::string() : hook.message();
  };
  auto loop = reinterpret_cast<uintptr_t>(code.address("code_loop_to_second"));
  // movl %edi,%eax (2) ; subl $1,%eax (3) ; cmpl $10,%eax (3) ; jg back to offset 2
  EXPECT_EQ(refuse("code_loop_to_second"),
            fmt::format("the branch at {:#x} jumps into the first 5 bytes of the function at {:#x}, "
                        "which the hook would overwrite",
                        loop + 8, loop));
  EXPECT_EQ(refuse("code_tiny"),
            fmt::format("the function at {:#x} ends after 3 bytes, before the 5-byte jump fits",
                        reinterpret_cast<uintptr_t>(code.address("code_tiny"))));
  EXPECT_EQ(refuse("code_jrcxz"),
            fmt::format("cannot relocate the instruction at {:#x}: jrcxz/loop have no rel32 form",
                        reinterpret_cast<uintptr_t>(code.address("code_jrcxz"))));
  // Nothing was written by a refusal.
  EXPECT_EQ(code.function<int(int)>("code_loop_to_second")(15), 10);

  auto first = EntryHook::install(code.address("code_square"), reinterpret_cast<void*>(&replacement_for_refusals),
                                  {.owner = "the first test hook"});
  ASSERT_TRUE(first.ok()) << first.message();
  EXPECT_EQ(refuse("code_square"),
            fmt::format("the function at {:#x} is already hooked at its entry by the first test hook",
                        reinterpret_cast<uintptr_t>(code.address("code_square"))));
  auto null = EntryHook::install(nullptr, reinterpret_cast<void*>(&replacement_for_refusals));
  ASSERT_FALSE(null.ok());
  EXPECT_EQ(null.message(), "entry hook: null target");
}

int (*real_call_first)(int) = nullptr;
int hooked_call_first(int x) { return real_call_first(x) + 100; }

// subq $8,%rsp (4 bytes), then a call at offset 4: the jump displaces 9 bytes, the call among
// them. Before: refused ("the call at ... is within the first 9 bytes"), because a call copied
// into the trampoline returns there, where an unwinder finds no FDE (a C++ exception thrown
// below it called std::terminate). Now the call is emulated: it returns into the function.
TEST_P(EntryHookTest, ACallInTheDisplacedBytesReturnsIntoTheFunctionItself) {
  for (const char* name : {"code_call_first", "code_call_first_probe"}) {
    auto start = reinterpret_cast<uintptr_t>(code.address(name));
    std::vector<uint8_t> before(reinterpret_cast<const uint8_t*>(start), reinterpret_cast<const uint8_t*>(start) + 16);
    {
      auto hook = EntryHook::install(code.address(name), reinterpret_cast<void*>(&hooked_call_first),
                                     {.publish_original = reinterpret_cast<void**>(&real_call_first)});
      ASSERT_TRUE(hook.ok()) << name << ": " << hook.message();
      EXPECT_EQ((*hook)->displaced_bytes(), 9u);
      EXPECT_EQ(code.function<int(int)>(name)(3), 104) << name;  // the callee's x + 1, through the hook
    }
    EXPECT_TRUE(std::equal(before.begin(), before.end(), reinterpret_cast<const uint8_t*>(start))) << name;
    EXPECT_EQ(code.function<int(int)>(name)(3), 4) << name;
  }
}

// The frame an unwinder sees below the emulated call is the hooked function's: code_probe
// returns to code_call_first_probe + 9, and glibc's backtrace walks from there up to this test.
TEST_P(EntryHookTest, UnwindersWalkThroughAFunctionWhoseFirstCallRunsFromTheTrampoline) {
  auto start = reinterpret_cast<uintptr_t>(code.address("code_call_first_probe"));
  auto hook = EntryHook::install(code.address("code_call_first_probe"), reinterpret_cast<void*>(&hooked_call_first),
                                 {.publish_original = reinterpret_cast<void**>(&real_call_first)});
  ASSERT_TRUE(hook.ok()) << hook.message();
  EXPECT_EQ(code.function<int(int)>("code_call_first_probe")(3), 104);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(code.probe_return_address()), start + 9);
  void** frames = nullptr;
  const int count = code.probe_frames(&frames);
  auto found = [&](uintptr_t from, uintptr_t to) {
    return std::any_of(frames, frames + count, [&](void* frame) {
      auto address = reinterpret_cast<uintptr_t>(frame);
      return address > from && address <= to;
    });
  };
  EXPECT_TRUE(found(start, start + 9)) << count << " frames";
  // hooked_call_first's own frame, above the trampoline: the walk went past the emulated call.
  const auto caller = reinterpret_cast<uintptr_t>(&hooked_call_first);
  EXPECT_TRUE(found(caller, caller + 64)) << count << " frames";
}

INSTANTIATE_TEST_SUITE_P(Optimization, EntryHookTest, ::testing::Values(HOOK_CODE_O0_PATH, HOOK_CODE_O2_PATH),
                         [](const auto& info) { return info.index == 0 ? "O0" : "O2"; });

TEST(EntryHookO2, SingleInstructionPolicy) {
  testing::CodeLibrary code(HOOK_CODE_O2_PATH);
  ASSERT_TRUE(code.loaded()) << code.error();
  square_hits = 0;
  unsigned long reached_before = code.square_calls();
  // At -O2 code_square starts with `lock addq $1, square_calls(%rip)`: one 9-byte instruction.
  auto ok = EntryHook::install(code.address("code_square"), reinterpret_cast<void*>(&counting_square),
                               {.require_single_instruction = true,
                                .publish_original = reinterpret_cast<void**>(&real_square)});
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_EQ((*ok)->displaced_instructions(), 1u);
  EXPECT_EQ((*ok)->displaced_bytes(), 9u);
  EXPECT_EQ(code.three_calls(3), 122);  // the relocated RIP-relative increment still counts
  EXPECT_EQ(square_hits.load(), 3);
  EXPECT_EQ(code.square_calls() - reached_before, 3u);
  // code_loop_to_second starts with a 2-byte mov: refused under the policy.
  auto loop = reinterpret_cast<uintptr_t>(code.address("code_loop_to_second"));
  auto refused = EntryHook::install(reinterpret_cast<void*>(loop), reinterpret_cast<void*>(&replacement_for_refusals),
                                    {.require_single_instruction = true});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(),
            fmt::format("the function at {:#x} starts with a 2-byte instruction: the jump would span 2 "
                        "instructions (require_single_instruction)",
                        loop));
}

}  // namespace
}  // namespace memprof::hook

namespace memprof::hook {
namespace {

// A hook destroyed after its library was unloaded must not write into whatever is mapped there.
TEST(HooksOutlivingTheirLibrary, UninstallLeavesUnloadedPagesAlone) {
  std::unique_ptr<EntryHook> entry;
  std::unique_ptr<CallSiteHook> sites;
  {
    testing::CodeLibrary code(HOOK_CODE_O2_PATH);
    ASSERT_TRUE(code.loaded()) << code.error();
    auto e = EntryHook::install(code.address("code_plus_bias"), reinterpret_cast<void*>(&counting_plus_bias),
                                {.publish_original = reinterpret_cast<void**>(&real_plus_bias)});
    auto c = CallSiteHook::install(code.address("code_square"), reinterpret_cast<void*>(&counting_square));
    ASSERT_TRUE(e.ok()) << e.message();
    ASSERT_TRUE(c.ok()) << c.message();
    entry = std::move(*e);
    sites = std::move(*c);
  }  // dlclose: the library's pages are unmapped
  void* old_target = entry->target();
  ASSERT_EQ(testing::protection_of(old_target), -1);
  // Something else mapped where the code was: the uninstalls must leave it untouched.
  auto page = reinterpret_cast<uintptr_t>(old_target) & ~uintptr_t{4095};
  void* filler = ::mmap(reinterpret_cast<void*>(page), 8192, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  ASSERT_EQ(filler, reinterpret_cast<void*>(page));
  entry.reset();
  sites.reset();
  const auto* bytes = static_cast<const uint8_t*>(filler);
  EXPECT_TRUE(std::all_of(bytes, bytes + 8192, [](uint8_t b) { return b == 0; }));
  ::munmap(filler, 8192);
}

}  // namespace
}  // namespace memprof::hook
