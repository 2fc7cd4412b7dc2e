// A fork while hooks change (hook_change.h): the child may undo what it inherited only when no
// other thread was changing hooks at that instant; else it leaves everything as it was copied
// (a hook removed in it keeps its jump) and refuses new hooks with kFrozenHooks.
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "core/hook/entry_hook.h"
#include "core/hook/hook_change.h"

namespace memprof::hook {
namespace {

// The store makes each function long enough for the jump (`lea; ret` alone is 4 bytes).
volatile int g_seen = 0;
__attribute__((noipa)) int hooked_function(int x) {
  g_seen = x;
  return x + 1;
}
__attribute__((noipa)) int other_function(int x) {
  g_seen = x;
  return x + 2;
}
__attribute__((noipa)) int replacement_function(int x) { return x * 100; }

// What a child found, one bit each: 0 means everything was as expected.
enum ChildFinding : int {
  kFrozenIsWrong = 1,
  kBytesAreWrong = 2,
  kCallIsWrong = 4,
  kInstallIsWrong = 8,
};

// Forks while another thread holds a HookChange open, or while none does; the child removes the
// parent's hook on hooked_function, then tries to hook other_function. Returns its findings.
int fork_and_check(bool other_thread_changing, bool expect_frozen) {
  const auto* start = reinterpret_cast<const uint8_t*>(&hooked_function);
  uint8_t original[5];
  std::memcpy(original, start, sizeof original);
  auto hook = EntryHook::install(reinterpret_cast<void*>(&hooked_function),
                                 reinterpret_cast<void*>(&replacement_function), {});
  if (!hook.ok()) return -1;
  uint8_t patched[5];
  std::memcpy(patched, start, sizeof patched);

  std::mutex mutex;
  std::condition_variable changed;
  bool open = false, release = false;
  std::thread changer([&] {
    if (!other_thread_changing) return;
    HookChange change;
    std::unique_lock lock(mutex);
    open = true;
    changed.notify_all();
    changed.wait(lock, [&] { return release; });
  });
  {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return open || !other_thread_changing; });
  }
  const pid_t child = ::fork();
  if (child == 0) {
    int findings = 0;
    if (hooks_frozen() != expect_frozen) findings |= kFrozenIsWrong;
    hook->reset();
    if (std::memcmp(start, expect_frozen ? patched : original, 5) != 0) findings |= kBytesAreWrong;
    if (hooked_function(3) != (expect_frozen ? 300 : 4)) findings |= kCallIsWrong;
    auto other = EntryHook::install(reinterpret_cast<void*>(&other_function),
                                    reinterpret_cast<void*>(&replacement_function), {});
    if (other.ok() == expect_frozen || (!other.ok() && other.message() != kFrozenHooks)) findings |= kInstallIsWrong;
    ::_exit(findings);
  }
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  changed.notify_all();
  changer.join();
  int status = 0;
  ::waitpid(child, &status, 0);
  hook->reset();
  EXPECT_EQ(std::memcmp(start, original, 5), 0) << "the parent's bytes";
  return WIFEXITED(status) ? WEXITSTATUS(status) : 256 + status;
}

TEST(HookChange, AChildForkedWhileNoHookChangesUndoesWhatItInheritedAndHooksOnItsOwn) {
  EXPECT_EQ(fork_and_check(/*other_thread_changing=*/false, /*expect_frozen=*/false), 0);
  EXPECT_FALSE(hooks_frozen());
}

TEST(HookChange, AChildForkedWhileAnotherThreadChangesHooksLeavesThemAsTheyWere) {
  EXPECT_EQ(fork_and_check(/*other_thread_changing=*/true, /*expect_frozen=*/true), 0);
  EXPECT_FALSE(hooks_frozen()) << "the parent is not frozen";
}

// The forking thread's own change goes on in the child, which finishes it: not a reason to freeze.
TEST(HookChange, TheForkingThreadsOwnChangeDoesNotFreezeTheChild) {
  HookChange own;
  EXPECT_EQ(fork_and_check(/*other_thread_changing=*/false, /*expect_frozen=*/false), 0);
}

}  // namespace
}  // namespace memprof::hook
