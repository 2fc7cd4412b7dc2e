// 8 threads call a hooked function in a tight loop while the hook is installed and removed
// 1,000 times. The replacements do not call the original, and the originals count their own
// calls, so hooked + unhooked must equal the calls made: no call lost, none run twice, and no
// thread ever executed a half-written patch (it would have crashed or returned garbage).
#include <signal.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "code_library.h"
#include "core/hook/call_site_hook.h"
#include "core/hook/entry_hook.h"
#include "core/hook/got_hook.h"
#include "core/hook/thread_parking.h"
#include "fixtures/target.h"

extern "C" int caller_now_add(int, int);
extern "C" int caller_lazy_add(int, int);

namespace memprof::hook {
namespace {

constexpr int kThreads = 8;
constexpr int kCycles = 1000;

std::atomic<unsigned long> hooked{0};

int stress_add(int a, int b) {
  hooked.fetch_add(1, std::memory_order_relaxed);
  return a + b;
}
int stress_square(int x) {
  hooked.fetch_add(1, std::memory_order_relaxed);
  return x * x + 1;
}
int stress_plus_bias(int x) {
  hooked.fetch_add(1, std::memory_order_relaxed);
  return x + 7;  // code_bias
}

struct Outcome {
  unsigned long calls = 0;      // calls the threads made
  unsigned long wrong = 0;      // results that were not the function's value
  unsigned long reached = 0;    // calls that reached the original
  unsigned long hooked = 0;
};

// Runs `call` (returns true when the result was right) on kThreads threads while `cycle`
// installs and removes the hook kCycles times. Each cycle waits until a hooked call happened
// and then until an unhooked one did, so both states are really exercised every time.
Outcome hammer(const std::function<bool()>& call, const std::function<unsigned long()>& reached,
               const std::function<void()>& cycle_install, const std::function<void()>& cycle_remove,
               bool callers_block_every_signal = false, int cycles = kCycles) {
  hooked = 0;
  unsigned long reached_before = reached();
  std::atomic<bool> stop{false};
  std::atomic<unsigned long> calls{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      if (callers_block_every_signal) {
        sigset_t all;
        sigfillset(&all);
        ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
      }
      unsigned long mine = 0, bad = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        bad += !call();
        // The machine has fewer cores than threads: let the patching thread in now and then,
        // or each of the 1,000 cycles waits for a full scheduler period.
        if (++mine % 256 == 0) std::this_thread::yield();
      }
      calls += mine;
      wrong += bad;
    });
  auto wait_for = [](const std::function<unsigned long()>& counter) {
    unsigned long start = counter();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (counter() == start && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    return counter() != start;
  };
  bool both_states = true;
  for (int i = 0; i < cycles; ++i) {
    cycle_install();
    // A failed install (its ASSERT only leaves the lambda) would make each cycle wait its 5 s.
    if (::testing::Test::HasFatalFailure()) break;
    both_states &= wait_for([] { return hooked.load(); });
    cycle_remove();
    both_states &= wait_for(reached);
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_TRUE(both_states);
  return {calls.load(), wrong.load(), reached() - reached_before, hooked.load()};
}

TEST(Stress, GotHookInstalledAndRemovedWhileEightThreadsCall) {
  std::unique_ptr<GotHook> hook;
  Outcome o = hammer([] { return caller_now_add(20, 22) == 42 && caller_lazy_add(1, 2) == 3; },
                     [] { return fixture_add_calls(); },
                     [&] {
                       auto installed = GotHook::install("fixture_add", reinterpret_cast<void*>(&stress_add));
                       ASSERT_TRUE(installed.ok()) << installed.message();
                       hook = std::move(*installed);
                     },
                     [&] { hook.reset(); });
  EXPECT_EQ(o.wrong, 0u);
  EXPECT_EQ(o.hooked + o.reached, 2 * o.calls);
  EXPECT_GT(o.hooked, 0u);
}

TEST(Stress, CallSiteHookInstalledAndRemovedWhileEightThreadsCall) {
  testing::CodeLibrary code(HOOK_CODE_O2_PATH);
  ASSERT_TRUE(code.loaded()) << code.error();
  std::unique_ptr<CallSiteHook> hook;
  int straddling = code.straddling_calls(3);
  // The thunk of a site whose displacement crosses a 16-byte block must lie within 16 MB of it
  // (near_memory.h's window), which the eight callers' stacks, mapped below the library once
  // they start, can fill whole (in 2 of 10 runs of the whole binary, after other tests left
  // the library there): placed once before they exist, the thunks are reused by every cycle.
  {
    auto early = CallSiteHook::install(code.address("code_square"), reinterpret_cast<void*>(&stress_square));
    ASSERT_TRUE(early.ok()) << early.message();
  }
  // Six sites per round: three plain, three whose displacement crosses a 16-byte block.
  Outcome o = hammer([&] { return code.three_calls(3) == 122 && code.straddling_calls(3) == straddling; },
                     [&] { return code.square_calls(); },
                     [&] {
                       auto installed = CallSiteHook::install(code.address("code_square"),
                                                              reinterpret_cast<void*>(&stress_square));
                       ASSERT_TRUE(installed.ok()) << installed.message();
                       hook = std::move(*installed);
                     },
                     [&] { hook.reset(); });
  EXPECT_EQ(o.wrong, 0u);
  EXPECT_EQ(o.hooked + o.reached, 6 * o.calls);
  EXPECT_GT(o.hooked, 0u);
}

// Entry hooks on code_square of `library`, installed with `options` and removed while the
// threads call code_three_calls: every call counted once, none returned garbage.
void hammer_entry_hook(const char* library, EntryHookOptions options,
                       bool callers_block_every_signal = false, int cycles = kCycles) {
  testing::CodeLibrary code(library);
  ASSERT_TRUE(code.loaded()) << code.error();
  std::unique_ptr<EntryHook> hook;
  Outcome o = hammer([&] { return code.three_calls(3) == 122; }, [&] { return code.square_calls(); },
                     [&] {
                       auto installed = EntryHook::install(code.address("code_square"),
                                                           reinterpret_cast<void*>(&stress_square),
                                                           options);
                       ASSERT_TRUE(installed.ok()) << installed.message();
                       hook = std::move(*installed);
                     },
                     [&] { hook.reset(); }, callers_block_every_signal, cycles);
  EXPECT_EQ(o.wrong, 0u);
  EXPECT_EQ(o.hooked + o.reached, 3 * o.calls);
  EXPECT_GT(o.hooked, 0u);
}

// One instruction under the jump (a 9-byte lock add at -O2): no thread can be stopped inside
// the bytes the jump replaces.
TEST(Stress, EntryHookInstalledAndRemovedWhileEightThreadsCall) {
  hammer_entry_hook(HOOK_CODE_O2_PATH, {.require_single_instruction = true});
}

// At -O0 the jump covers three instructions (push, mov, mov): written with an int3 holding the
// entry and the callers parked outside it (park_threads). Callers that reach the int3 meanwhile
// run the relocated original; none may ever run half of the old prologue and half of the jump.
TEST(Stress, EntryHookOverSeveralInstructionsInstalledAndRemovedWhileEightThreadsCall) {
  hammer_entry_hook(HOOK_CODE_O0_PATH, {.park_threads = true});
}

// The same with callers that block every signal, SIGTRAP included (worker threads of servers
// that leave signals to one thread do): an int3 reached by such a thread kills the process,
// so the jump goes in without one. (They never reach the parking handler either: each install
// waits 2 ms for them, and used to wait 100 ms, hence 30 cycles.)
TEST(Stress, EntryHookOverSeveralInstructionsWhileCallersBlockEverySignal) {
  hammer_entry_hook(HOOK_CODE_O0_PATH, {.park_threads = true}, /*callers_block_every_signal=*/true,
                    /*cycles=*/30);
}

// Two functions whose jumps cover several instructions (-O0), hooked together with one parking
// of the callers (install_many) and removed, while 8 threads call both.
TEST(Stress, EntryHooksInstalledTogetherWhileEightThreadsCall) {
  testing::CodeLibrary code(HOOK_CODE_O0_PATH);
  ASSERT_TRUE(code.loaded()) << code.error();
  std::vector<std::unique_ptr<EntryHook>> hooks;
  const uint64_t parkings_before = ThreadParking::parkings_so_far();
  Outcome o = hammer([&] { return code.three_calls(3) == 122 && code.call_plus_bias(5) == 24; },
                     [&] { return code.square_calls() + code.plus_bias_calls(); },
                     [&] {
                       const EntryHookRequest requests[] = {
                           {code.address("code_square"), reinterpret_cast<void*>(&stress_square)},
                           {code.address("code_plus_bias"), reinterpret_cast<void*>(&stress_plus_bias)}};
                       for (auto& installed : EntryHook::install_many(requests, {.park_threads = true})) {
                         ASSERT_TRUE(installed.ok()) << installed.message();
                         hooks.push_back(std::move(*installed));
                       }
                     },
                     [&] { hooks.clear(); }, false, 200);
  EXPECT_EQ(o.wrong, 0u);
  EXPECT_EQ(o.hooked + o.reached, 4 * o.calls);
  EXPECT_GT(o.hooked, 0u);
  // One parking per install of both, and a few retries when a caller was inside a prologue.
  const uint64_t parkings = ThreadParking::parkings_so_far() - parkings_before;
  EXPECT_LT(parkings, 200u * 2);
  RecordProperty("parkings", static_cast<int>(parkings));
  std::printf("%llu parkings for 200 installs of 2 hooks\n", static_cast<unsigned long long>(parkings));
}

}  // namespace
}  // namespace memprof::hook

namespace memprof::hook {
namespace {

// uninstall_all puts every hook's bytes back at once: each function is whole again, and the
// registry lets the same functions be hooked anew.
TEST(EntryHookBatch, UninstallAllRestoresEveryFunctionAndFreesTheirEntries) {
  testing::CodeLibrary code(HOOK_CODE_O0_PATH);
  ASSERT_TRUE(code.loaded()) << code.error();
  void* targets[] = {code.address("code_square"), code.address("code_plus_bias")};
  std::vector<uint8_t> before[2];
  for (int i = 0; i < 2; ++i) before[i].assign(static_cast<uint8_t*>(targets[i]), static_cast<uint8_t*>(targets[i]) + 16);
  const EntryHookRequest requests[] = {{targets[0], reinterpret_cast<void*>(&stress_square)},
                                       {targets[1], reinterpret_cast<void*>(&stress_plus_bias)}};
  for (int round = 0; round < 2; ++round) {
    std::vector<std::unique_ptr<EntryHook>> hooks;
    for (auto& installed : EntryHook::install_many(requests, {.park_threads = true})) {
      ASSERT_TRUE(installed.ok()) << installed.message();
      hooks.push_back(std::move(*installed));
    }
    hooked = 0;
    EXPECT_EQ(code.call_plus_bias(5), 24);
    EXPECT_EQ(hooked.load(), 1u);
    EntryHook::uninstall_all(hooks);
    EXPECT_TRUE(hooks.empty());
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(std::vector<uint8_t>(static_cast<uint8_t*>(targets[i]), static_cast<uint8_t*>(targets[i]) + 16), before[i]);
    }
    const unsigned long reached = code.plus_bias_calls();
    EXPECT_EQ(code.call_plus_bias(5), 24);
    EXPECT_EQ(code.plus_bias_calls(), reached + 1) << "the original runs again";
  }
}

}  // namespace
}  // namespace memprof::hook
