#include "core/util/malloc_policy.h"

#include <sys/resource.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/util/proc_file.h"

#include "vm_flags.h"

namespace memprof {
namespace {

// Each test runs the policy in a child process (a death test), so that the test binary's own
// heap, which other tests look at, keeps glibc's defaults. The child's exit code is the result.

[[noreturn]] void allocate_under_the_policy() {
  reuse_freed_memory();
  // 8 MB in blocks: the first may extend the heap's start, which is not 2 MB-aligned.
  std::array<void*, 16> blocks{};
  for (void*& block : blocks) block = std::malloc(512 << 10);
  const std::string flags = vm_flags_at(blocks.back());
  for (void* block : blocks) std::free(block);
  std::exit(flags.find(" hg") != std::string::npos ? 0 : 1);
}

// What `memprof` allocates with malloc (chunk arrays, hash tables) faults in whole huge pages.
TEST(MallocPolicy, HeapBlocksLiveInHugePageMemory) {
  EXPECT_EXIT(allocate_under_the_policy(), ::testing::ExitedWithCode(0), "");
}

// The kernel's count of huge-page faults served with 4 KB pages instead (no free 2 MB page).
uint64_t huge_page_fallbacks() {
  auto vmstat = read_proc_file("/proc/vmstat");
  if (!vmstat.ok()) return 0;
  const size_t at = vmstat->find("\nthp_fault_fallback ");
  return at == std::string::npos ? 0 : std::strtoull(vmstat->c_str() + at + 20, nullptr, 10);
}

[[noreturn]] void touch_the_first_blocks() {
  reuse_freed_memory();
  // The blocks a command allocates first (the analyzer's first chunk arrays): 4 MB, 1,024 pages
  // of 4 KB, written right away.
  const uint64_t fallbacks = huge_page_fallbacks();
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  std::array<char*, 8> blocks{};
  for (char*& block : blocks) {
    block = static_cast<char*>(std::malloc(512 << 10));
    std::memset(block, 1, 512 << 10);
  }
  getrusage(RUSAGE_SELF, &after);
  for (char* block : blocks) std::free(block);
  // A machine short of free 2 MB pages answers in 4 KB pages whatever the marks: no verdict.
  if (huge_page_fallbacks() != fallbacks) std::exit(0);
  std::exit(after.ru_minflt - before.ru_minflt < 64 ? 0 : 1);
}

// The first blocks too: nothing of the heap's first 2 MB ranges may be touched before they are
// marked (a range with one 4 KB page in faults the rest 4 KB at a time, which is what the
// analyzer's first arrays did: 560 faults of ~10 us on a 30 MB dump).
TEST(MallocPolicy, TheFirstBlocksFaultInHugePages) {
  auto mode = read_proc_file("/sys/kernel/mm/transparent_hugepage/enabled");
  if (!mode.ok() || mode->find("[never]") != std::string::npos) {
    GTEST_SKIP() << "transparent huge pages are off on this machine";
  }
  EXPECT_EXIT(touch_the_first_blocks(), ::testing::ExitedWithCode(0), "");
}

[[noreturn]] void allocate_under_an_address_space_limit() {
  const rlimit limit{.rlim_cur = 512 << 20, .rlim_max = 512 << 20};
  if (setrlimit(RLIMIT_AS, &limit) != 0) std::exit(2);
  reuse_freed_memory();
  std::array<void*, 64> blocks{};
  for (void*& block : blocks) block = std::malloc(1 << 20);
  bool all = true;
  for (void* block : blocks) all = all && block != nullptr;
  for (void* block : blocks) std::free(block);
  std::exit(all ? 0 : 1);
}

// Under an address-space limit the heap cannot be reserved ahead; malloc must work as before.
TEST(MallocPolicy, AnAddressSpaceLimitLeavesMallocWorking) {
  EXPECT_EXIT(allocate_under_an_address_space_limit(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace memprof
