// The patching function: protections read and restored, atomic-store choice, refusals.
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "core/hook/hook_change.h"
#include "core/hook/patch.h"
#include "core/util/scoped_fd.h"
#include "test_support.h"

namespace memprof::hook {
namespace {

size_t page() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

ScopedMmap map_pages(size_t count, int protection) {
  void* p = ::mmap(nullptr, count * page(), protection, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return ScopedMmap(p, count * page());
}

TEST(Patch, WritesReadOnlyAndExecutablePagesAndRestoresTheirProtection) {
  for (int protection : {PROT_READ, PROT_READ | PROT_EXEC, PROT_EXEC}) {
    ScopedMmap pages = map_pages(1, PROT_READ | PROT_WRITE);
    ASSERT_TRUE(pages.valid());
    std::memset(pages.data(), 0xcc, page());
    ASSERT_EQ(::mprotect(pages.data(), page(), protection), 0);
    const uint8_t bytes[] = {1, 2, 3};
    auto* target = static_cast<uint8_t*>(pages.data()) + 40;
    ASSERT_TRUE(patch_memory(target, bytes).ok());
    EXPECT_EQ(testing::protection_of(target), protection);
    ASSERT_EQ(::mprotect(pages.data(), page(), PROT_READ), 0);
    EXPECT_EQ(std::memcmp(target, bytes, 3), 0);
    EXPECT_EQ(target[-1], 0xcc);
    EXPECT_EQ(target[3], 0xcc);
  }
}

// One page of code (every byte a `ret`), read and executable as code pages are; invalid when
// it cannot be made.
ScopedMmap code_page() {
  ScopedMmap pages = map_pages(1, PROT_READ | PROT_WRITE);
  if (!pages.valid()) return pages;
  std::memset(pages.data(), 0xc3, page());
  if (::mprotect(pages.data(), page(), PROT_READ | PROT_EXEC) != 0) return ScopedMmap();
  return pages;
}

// Forks in the middle of a patch, while its page is writable (and executable).
class ForkingGate final : public StoreGate {
 public:
  explicit ForkingGate(const void* target) : target_(target) {}
  bool before_store() noexcept override {
    child_ = ::fork();
    if (child_ == 0) {
      settle_hooks_after_fork();  // as the agent's fork handler does, whatever ran before it
      ::_exit(testing::protection_of(target_) == PROT_READ + PROT_EXEC ? 0 : 1);
    }
    return true;
  }
  void after_store() noexcept override {}
  pid_t child() const { return child_; }

 private:
  const void* target_;
  pid_t child_ = -1;
};

// The parent puts the page's protection back after the store; a child forked between the two
// (a preforking server while a trace starts) has no patcher to do it, and kept the page
// writable and executable for good.
TEST(Patch, AChildForkedDuringAPatchGetsThePagesProtectionBack) {
  ScopedMmap pages = code_page();
  ASSERT_TRUE(pages.valid());
  auto* target = static_cast<uint8_t*>(pages.data()) + 64;
  const uint8_t bytes[] = {0x90};
  ForkingGate gate(target);
  bool busy = false;
  ASSERT_TRUE(patch_memory(target, bytes, gate, &busy).ok());
  int status = 0;
  ASSERT_EQ(::waitpid(gate.child(), &status, 0), gate.child());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_EQ(testing::protection_of(target), PROT_READ | PROT_EXEC);
  EXPECT_EQ(*target, 0x90);
}

// Settles again while the page is writable: as the handler registered with the first
// HookChange does, after the agent's handler started the thread now patching.
class SettlingGate final : public StoreGate {
 public:
  bool before_store() noexcept override {
    settle_hooks_after_fork();
    return true;
  }
  void after_store() noexcept override {}
};

// In a forked child the agent's new thread ends the copied sessions (patches) while the fork
// handlers registered after the agent's still run: settling twice in a process must not make
// a page read-only again under a patch in progress (the store then killed the child: twice in
// 33 native sessions on a forking shell, with df7e725).
TEST(Patch, SettlingAgainInTheSameChildLeavesAPatchInProgressAlone) {
  ScopedMmap pages = code_page();
  ASSERT_TRUE(pages.valid());
  auto* target = static_cast<uint8_t*>(pages.data()) + 64;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    settle_hooks_after_fork();
    SettlingGate gate;
    bool busy = false;
    const uint8_t bytes[] = {0x90};
    const bool patched = patch_memory(target, bytes, gate, &busy).ok();
    ::_exit(patched && *target == 0x90 && testing::protection_of(target) == PROT_READ + PROT_EXEC ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status)) : "status " + std::to_string(status));
}

TEST(Patch, SpanningTwoPagesWhenAlone) {
  ScopedMmap pages = map_pages(2, PROT_READ | PROT_EXEC);
  ASSERT_TRUE(pages.valid());
  auto* target = static_cast<uint8_t*>(pages.data()) + page() - 3;
  const uint8_t bytes[] = {9, 8, 7, 6, 5, 4};
  auto status = patch_memory(target, bytes);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(std::memcmp(target, bytes, 6), 0);
  EXPECT_EQ(testing::protection_of(target), PROT_READ | PROT_EXEC);
  EXPECT_EQ(testing::protection_of(target + 5), PROT_READ | PROT_EXEC);
}

TEST(Patch, RefusesANonAtomicWriteWhileAnotherThreadRuns) {
  ScopedMmap pages = map_pages(1, PROT_READ | PROT_EXEC);
  ASSERT_TRUE(pages.valid());
  auto* base = static_cast<uint8_t*>(pages.data());
  Result<Ok> refused = ok_status(), fits = ok_status();
  {
    testing::ParkedThread other;
    const uint8_t across[] = {1, 2, 3, 4};
    refused = patch_memory(base + 14, across);  // bytes 14..17 cross a 16-byte boundary
    const uint8_t inside[] = {5, 6, 7, 8, 9};
    fits = patch_memory(base + 17, inside);  // 17..21 lie in the aligned block 16..31
  }
  const uint8_t inside[] = {5, 6, 7, 8, 9};
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(),
            fmt::format("cannot patch 4 bytes at {:#x} atomically: they cross a 16-byte boundary "
                        "and 1 other thread(s) are running",
                        reinterpret_cast<uintptr_t>(base + 14)));
  EXPECT_EQ(base[14], 0);
  EXPECT_EQ(base[15], 0);
  ASSERT_TRUE(fits.ok()) << fits.message();
  EXPECT_EQ(std::memcmp(base + 17, inside, 5), 0);
  EXPECT_EQ(testing::protection_of(base), PROT_READ | PROT_EXEC);
}

TEST(Patch, OnlyChangedBytesAreStored) {
  ScopedMmap pages = map_pages(1, PROT_READ | PROT_WRITE);
  ASSERT_TRUE(pages.valid());
  auto* base = static_cast<uint8_t*>(pages.data());
  // Identical leading and trailing bytes are not part of the store, so a 32-byte request that
  // changes one byte is a one-byte store even though it crosses 16-byte boundaries.
  uint8_t bytes[32] = {};
  bytes[20] = 0x5a;
  Status status = ok_status();
  {
    testing::ParkedThread other;
    status = patch_memory(base + 4, bytes);
  }
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(base[24], 0x5a);
}

TEST(Patch, UnmappedAddressIsAnError) {
  ScopedMmap pages = map_pages(1, PROT_READ);
  ASSERT_TRUE(pages.valid());
  auto address = reinterpret_cast<uintptr_t>(pages.data());
  pages.reset();
  const uint8_t bytes[] = {1};
  auto status = patch_memory(reinterpret_cast<void*>(address), bytes);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), fmt::format("cannot patch 1 bytes at {:#x}: page {:#x} is not mapped", address, address));
}

TEST(Patch, ThreadCountSeesOtherThreads) {
  auto alone = thread_count();
  ASSERT_TRUE(alone.ok());
  Result<size_t> two = size_t{0};
  {
    testing::ParkedThread other;
    two = thread_count();
  }
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*two, *alone + 1);
}

}  // namespace
}  // namespace memprof::hook
