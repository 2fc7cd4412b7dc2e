// Call-site hooks on the -O0 and -O2 builds of the code fixture: the decoder finds exactly the
// three real call sites (not the e8 byte hidden in an immediate), every call through them is
// seen, each site changes by one byte and gets it back.
#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include <gtest/gtest.h>

#include "code_library.h"
#include "core/hook/call_site_hook.h"
#include "test_support.h"

namespace memprof::hook {
namespace {

std::atomic<long> hits{0};
int (*real_square)(int) = nullptr;
int counting_square(int x) {
  hits.fetch_add(1, std::memory_order_relaxed);
  return real_square(x);
}

class CallSiteHookTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(code.loaded()) << code.error();
    hits = 0;
    real_square = code.function<int(int)>("code_square");
  }
  testing::CodeLibrary code{GetParam()};
};

std::string function_containing(uintptr_t address) {
  Dl_info info;
  if (::dladdr(reinterpret_cast<void*>(address), &info) == 0 || info.dli_sname == nullptr) return "?";
  return info.dli_sname;
}

TEST_P(CallSiteHookTest, FindsExactlyTheRealCallSites) {
  auto sites = CallSiteHook::find_sites(code.address("code_square"));
  ASSERT_TRUE(sites.ok()) << sites.message();
  ASSERT_EQ(sites->size(), 6u);
  std::vector<std::string> callers;
  for (uintptr_t site : *sites) {
    callers.push_back(function_containing(site));
    EXPECT_EQ(*reinterpret_cast<const uint8_t*>(site), 0xe8);
  }
  std::sort(callers.begin(), callers.end());
  EXPECT_EQ(callers, (std::vector<std::string>{"code_straddling_calls", "code_straddling_calls",
                                               "code_straddling_calls", "code_three_calls",
                                               "code_three_calls", "code_three_calls"}));
  auto straddling = reinterpret_cast<uintptr_t>(code.straddling_calls);
  for (uintptr_t offset : {12, 29, 46})
    EXPECT_NE(std::find(sites->begin(), sites->end(), straddling + offset), sites->end()) << offset;
  // The movabs immediate in code_fake_call holds e8 + a rel32 to code_square at offset 2.
  auto fake = reinterpret_cast<uintptr_t>(code.address("code_fake_call"));
  const auto* fake_bytes = reinterpret_cast<const uint8_t*>(fake);
  int32_t rel;
  std::memcpy(&rel, fake_bytes + 3, 4);
  ASSERT_EQ(fake_bytes[2], 0xe8);
  ASSERT_EQ(fake + 7 + rel, reinterpret_cast<uintptr_t>(code.address("code_square")));
  for (uintptr_t site : *sites) EXPECT_NE(site, fake + 2);
}

TEST_P(CallSiteHookTest, EveryCallThroughASiteIsSeen) {
  int straddling_result = code.straddling_calls(3);
  unsigned long reached_before = code.square_calls();
  auto hook = CallSiteHook::install(code.address("code_square"), reinterpret_cast<void*>(&counting_square));
  ASSERT_TRUE(hook.ok()) << hook.message();
  ASSERT_EQ((*hook)->sites().size(), 6u);
  EXPECT_EQ((*hook)->original(), code.address("code_square"));
  EXPECT_EQ((*hook)->object(), GetParam());

  for (int i = 0; i < 4; ++i) EXPECT_EQ(code.three_calls(3), 122);
  EXPECT_EQ(code.straddling_calls(3), straddling_result);
  EXPECT_EQ(hits.load(), 15);
  EXPECT_EQ(code.square_calls() - reached_before, 15u);
  EXPECT_EQ(real_square(2), 5);  // a direct call of the target is not a call site
  EXPECT_EQ(hits.load(), 15);
}

// Patched while another thread runs, so every displacement change must be one atomic store:
// the changed bytes of each site lie in one aligned 16-byte block, including the three sites
// whose displacement crosses a block boundary.
TEST_P(CallSiteHookTest, EachSiteChangesWithinOneAlignedBlockAndIsRestored) {
  auto target = reinterpret_cast<uintptr_t>(code.address("code_square"));
  auto sites = CallSiteHook::find_sites(code.address("code_square"));
  ASSERT_TRUE(sites.ok()) << sites.message();
  std::vector<testing::Snapshot> before;
  for (uintptr_t site : *sites) before.push_back(testing::snapshot(site, 5));
  {
    testing::ParkedThread other;
    auto hook = CallSiteHook::install(code.address("code_square"), reinterpret_cast<void*>(&counting_square));
    ASSERT_TRUE(hook.ok()) << hook.message();
    ASSERT_EQ((*hook)->sites().size(), sites->size());
    for (size_t i = 0; i < sites->size(); ++i) {
      const CallSite& site = (*hook)->sites()[i];
      ASSERT_EQ(site.address, (*sites)[i]);
      auto during = testing::snapshot(site.address, 5);
      EXPECT_EQ(during.bytes[0], 0xe8);
      EXPECT_EQ(during.protections, before[i].protections);
      size_t first = 1, last = 4;
      while (first < 5 && during.bytes[first] == before[i].bytes[first]) ++first;
      while (last > first && during.bytes[last] == before[i].bytes[last]) --last;
      ASSERT_LE(first, last) << "site " << i << " unchanged";
      EXPECT_EQ((site.address + first) / 16, (site.address + last) / 16) << "site " << i;
      int32_t rel;
      std::memcpy(&rel, during.bytes.data() + 1, 4);
      EXPECT_EQ(site.address + 5 + rel, site.thunk);
      EXPECT_NE(site.thunk % (1 << 24), target % (1 << 24));  // no predictor aliasing
      EXPECT_EQ(testing::protection_of(reinterpret_cast<void*>(site.thunk)), PROT_READ | PROT_EXEC);
    }
  }
  for (size_t i = 0; i < sites->size(); ++i) EXPECT_EQ(testing::snapshot((*sites)[i], 5), before[i]);
  EXPECT_EQ(code.three_calls(3), 122);
  EXPECT_EQ(hits.load(), 0);
}

TEST_P(CallSiteHookTest, ReinstallingReusesTheRetainedThunks) {
  std::vector<uintptr_t> first;
  for (int i = 0; i < 3; ++i) {
    auto hook = CallSiteHook::install(code.address("code_square"), reinterpret_cast<void*>(&counting_square));
    ASSERT_TRUE(hook.ok()) << hook.message();
    std::vector<uintptr_t> thunks;
    for (const auto& site : (*hook)->sites()) thunks.push_back(site.thunk);
    if (i == 0) first = thunks;
    EXPECT_EQ(thunks, first);
  }
}

TEST_P(CallSiteHookTest, ErrorsAreClear) {
  auto none = CallSiteHook::install(code.address("code_unused"), reinterpret_cast<void*>(&counting_square));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.message(), fmt::format("no call to {} in {}", code.address("code_unused"), GetParam()));
  int on_stack = 0;
  auto nowhere = CallSiteHook::find_sites(code.address("code_square"), &on_stack);
  ASSERT_FALSE(nowhere.ok());
  EXPECT_EQ(nowhere.message(), fmt::format("address {} is not inside any loaded object",
                                           static_cast<const void*>(&on_stack)));
}

INSTANTIATE_TEST_SUITE_P(Optimization, CallSiteHookTest, ::testing::Values(HOOK_CODE_O0_PATH, HOOK_CODE_O2_PATH),
                         [](const auto& info) { return info.index == 0 ? "O0" : "O2"; });

}  // namespace
}  // namespace memprof::hook
