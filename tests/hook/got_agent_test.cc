// A program that does not contain the hooking engine: libhook_agent.so brings it in, by dlopen
// (what `memprof attach` injects) or by LD_PRELOAD (a launch with the agent), and hooks
// fixture_add with GotHook's default options. The program's own calls go through its own GOT
// slot, which the default choice of objects must patch; the tests in got_program_test.cc cannot
// see that, because there the program is the hooking library and only a filter selects it.
// Linked with -z now and RELRO, so the program's GOT is constant except for what the hook writes.
#include <dlfcn.h>
#include <sys/mman.h>

#include <cstdlib>
#include <vector>

#include <gtest/gtest.h>

#include "core/elf/elf_file.h"
#include "fixtures/agent.h"
#include "fixtures/target.h"
#include "test_support.h"

// Not in memprof::hook: the engine's namespace holds only what the test helpers define here.
namespace memprof {
namespace {

namespace testing = hook::testing;

// Kept out of line so the call to fixture_add is made from the program's own code.
__attribute__((noinline)) int program_calls_add(int a, int b) { return fixture_add(a, b); }

// The agent's entry points, looked up by name as whoever loaded it would. The agent stays
// loaded for the rest of the process, as an injected agent does.
struct Agent {
  void* handle = ::dlopen(HOOK_AGENT_PATH, RTLD_NOW | RTLD_LOCAL);
  template <typename Function>
  Function entry(const char* name) const {
    return reinterpret_cast<Function>(::dlsym(handle, name));
  }
  decltype(&agent_hook_fixture_add) hook_fixture_add = entry<decltype(hook_fixture_add)>("agent_hook_fixture_add");
  decltype(&agent_unhook) unhook = entry<decltype(unhook)>("agent_unhook");
  decltype(&agent_hook_calls) hook_calls = entry<decltype(hook_calls)>("agent_hook_calls");
  decltype(&agent_replacement) replacement = entry<decltype(replacement)>("agent_replacement");
};

TEST(GotAgent, ProgramDoesNotContainTheHookingEngine) {
  auto file = elf::ElfFile::open(testing::program_path());
  ASSERT_TRUE(file.ok()) << file.message();
  auto symbols = file->static_symbols();
  ASSERT_TRUE(symbols.ok()) << symbols.message();
  ASSERT_FALSE(symbols->empty());
  // Nothing in memprof::hook but the test helpers (memprof::hook::testing).
  for (const auto& symbol : *symbols)
    EXPECT_FALSE(symbol.name.starts_with("_ZN7memprof4hook") &&
                 !symbol.name.starts_with("_ZN7memprof4hook7testing"))
        << symbol.name;
}

TEST(GotAgent, DefaultOptionsPatchTheProgramsOwnSlot) {
  if (std::getenv("MEMPROF_AGENT_PRELOADED")) {
    ASSERT_NE(::dlopen(HOOK_AGENT_PATH, RTLD_NOW | RTLD_NOLOAD), nullptr) << "LD_PRELOAD did not load the agent";
  }
  std::vector<void**> slot = testing::got_slots_from_file(testing::program_path(), "fixture_add");
  ASSERT_EQ(slot.size(), 1u);
  const void* bound = *slot[0];
  const std::vector<uint8_t> got = testing::got_bytes(testing::program_path());
  ASSERT_FALSE(got.empty());
  ASSERT_EQ(testing::protection_of(slot[0]), PROT_READ);  // RELRO

  Agent agent;
  ASSERT_NE(agent.handle, nullptr) << ::dlerror();
  ASSERT_TRUE(agent.hook_fixture_add && agent.unhook && agent.hook_calls && agent.replacement);
  const long hooked_before = agent.hook_calls();
  const unsigned long reached_before = fixture_add_calls();
  const char* error = agent.hook_fixture_add();
  ASSERT_TRUE(error == nullptr) << error;
  EXPECT_EQ(*slot[0], agent.replacement());
  EXPECT_EQ(testing::protection_of(slot[0]), PROT_READ);

  for (int i = 0; i < 7; ++i) EXPECT_EQ(program_calls_add(i, 3), i + 3);
  EXPECT_EQ(agent.hook_calls() - hooked_before, 7);
  EXPECT_EQ(fixture_add_calls() - reached_before, 7u);  // the replacement ran the original

  agent.unhook();
  EXPECT_EQ(*slot[0], bound);
  EXPECT_EQ(testing::got_bytes(testing::program_path()), got);  // every slot, the dlopen follower's included
  EXPECT_EQ(testing::protection_of(slot[0]), PROT_READ);
  EXPECT_EQ(program_calls_add(2, 2), 4);
  EXPECT_EQ(agent.hook_calls() - hooked_before, 7);
  EXPECT_EQ(fixture_add_calls() - reached_before, 8u);
}

}  // namespace
}  // namespace memprof
