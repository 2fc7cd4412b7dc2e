// The native engine inside this very process: a session hooks the malloc family at its entry,
// and the tests allocate through libnative_allocating.so (tests/native/fixtures), whose
// functions name each call site. Every count is exact: the test threads make no other
// allocation at those sites, and the engine's own allocations (snapshots) are kept apart.
#include <dlfcn.h>
#include <malloc.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fixtures/allocating.h"
#include "fixtures/allocating_cxx.h"
#include "fixtures/ruby_like.h"
#include "core/hook/thread_parking.h"
#include "native/call_site_table.h"
#include "native/native_session.h"

namespace memprof::native {
namespace {

std::unique_ptr<NativeSession> start_session(NativeOptions options = {}) {
  auto session = NativeSession::start(options);
  EXPECT_TRUE(session.ok()) << session.message();
  if (!session.ok()) return nullptr;
  EXPECT_TRUE((*session)->problems().empty()) << (*session)->problems().front();
  return std::move(*session);
}

std::string symbol_at(uintptr_t address) {
  Dl_info info;
  if (::dladdr(reinterpret_cast<void*>(address), &info) == 0 || info.dli_sname == nullptr) return "?";
  return info.dli_sname;
}

// The sites whose return address lies inside the function `symbol`.
std::vector<SiteRow> sites_in(const NativeSnapshot& snapshot, const std::string& symbol) {
  std::vector<SiteRow> found;
  for (const SiteRow& row : snapshot.sites)
    if (symbol_at(row.return_address) == symbol) found.push_back(row);
  return found;
}

SiteRow only_site_in(const NativeSnapshot& snapshot, const std::string& symbol) {
  std::vector<SiteRow> found = sites_in(snapshot, symbol);
  EXPECT_EQ(found.size(), 1u) << symbol;
  return found.empty() ? SiteRow{} : found.front();
}

void expect_row(const SiteRow& row, uint64_t allocations, uint64_t bytes, uint64_t frees,
                uint64_t freed_bytes) {
  EXPECT_EQ(row.allocations, allocations);
  EXPECT_EQ(row.allocated_bytes, bytes);
  EXPECT_EQ(row.frees, frees);
  EXPECT_EQ(row.freed_bytes, freed_bytes);
  EXPECT_EQ(row.live_blocks, allocations - frees);
  EXPECT_EQ(row.live_bytes, bytes - freed_bytes);
}

void free_all(std::vector<void*>& blocks) {
  for (void* block : blocks) native_free(block);
  blocks.clear();
}

std::vector<uint8_t> first_bytes(const char* function) {
  auto* start = static_cast<const uint8_t*>(::dlsym(RTLD_DEFAULT, function));
  return {start, start + 16};
}

// The allocators a session patches (aligned_alloc is memalign's address on glibc 2.36).
constexpr const char* kPatched[] = {"malloc", "calloc", "realloc", "reallocarray", "free",
                                    "posix_memalign", "memalign", "valloc", "pvalloc"};

std::vector<std::vector<uint8_t>> patched_bytes() {
  std::vector<std::vector<uint8_t>> bytes;
  for (const char* name : kPatched) bytes.push_back(first_bytes(name));
  return bytes;
}

// 4 threads calling malloc, calloc, reallocarray and free in a loop until destroyed.
class AllocatingThreads {
 public:
  AllocatingThreads() {
    for (int t = 0; t < 4; ++t)
      threads_.emplace_back([this] {
        while (!stop_.load(std::memory_order_relaxed)) {
          void* a = native_malloc(24);
          void* b = native_calloc(3, 8);
          b = native_reallocarray(b, 6, 8);
          native_free(a);
          native_free(b);
          calls_.fetch_add(1, std::memory_order_relaxed);
        }
      });
  }
  ~AllocatingThreads() {
    stop_ = true;
    for (auto& thread : threads_) thread.join();
  }
  // Returns once the threads made `rounds` more rounds of calls.
  void wait_for(uint64_t rounds) {
    uint64_t seen = calls_.load();
    while (calls_.load() < seen + rounds) ::usleep(100);
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> calls_{0};
  std::vector<std::thread> threads_;
};

TEST(Native, LeakedBlocksAreChargedToTheCallSiteInsideTheCallingFunction) {
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  constexpr int kBlocks = 37;
  constexpr size_t kSize = 48;
  std::vector<void*> blocks(kBlocks);
  native_leak(blocks.data(), kBlocks, kSize);
  NativeSnapshot snapshot = session->snapshot();
  SiteRow row = only_site_in(snapshot, "native_leak");
  expect_row(row, kBlocks, kBlocks * kSize, 0, 0);
  EXPECT_EQ(row.temporaries, 0u);
  EXPECT_EQ(snapshot.totals.unknown_frees, 0u);
  EXPECT_EQ(snapshot.totals.dropped, 0u);
  EXPECT_EQ(snapshot.totals.missed_frees, 0u);
  free_all(blocks);
  expect_row(only_site_in(session->snapshot(), "native_leak"), kBlocks, kBlocks * kSize, kBlocks,
             kBlocks * kSize);
}

TEST(Native, TemporariesAreAllocatedAndFreedAndLeaveNothingLive) {
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  native_temporaries(1000, 64);
  SiteRow row = only_site_in(session->snapshot(), "native_temporaries");
  expect_row(row, 1000, 64000, 1000, 64000);
  EXPECT_EQ(row.temporaries, 1000u);
}

TEST(Native, AFreeAfterAnotherAllocationIsNotTemporary) {
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  std::vector<void*> blocks(2);
  native_leak(blocks.data(), 2, 32);
  native_free(blocks[0]);  // blocks[1] was allocated after it: not temporary
  native_free(blocks[1]);  // the latest allocation of this thread: temporary
  SiteRow row = only_site_in(session->snapshot(), "native_leak");
  expect_row(row, 2, 64, 2, 64);
  EXPECT_EQ(row.temporaries, 1u);
}

// A chain is one malloc and ten reallocs: each realloc frees the previous block and allocates
// the next at the realloc's call site, so one block of the final size stays live.
TEST(Native, ReallocChainLeavesOneLiveBlockOfTheFinalSize) {
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  constexpr size_t kFirst = 16, kStep = 24;
  constexpr int kTimes = 10;
  void* block = native_realloc_chain(kFirst, kStep, kTimes);
  std::vector<SiteRow> rows = sites_in(session->snapshot(), "native_realloc_chain");
  ASSERT_EQ(rows.size(), 2u);
  // The malloc site is the one with a single allocation.
  const SiteRow& first = rows[0].allocations == 1 ? rows[0] : rows[1];
  const SiteRow& chain = rows[0].allocations == 1 ? rows[1] : rows[0];
  expect_row(first, 1, kFirst, 1, kFirst);
  uint64_t grown = 0, released = 0;
  for (int i = 1; i <= kTimes; ++i) grown += kFirst + kStep * i;
  for (int i = 1; i < kTimes; ++i) released += kFirst + kStep * i;
  expect_row(chain, kTimes, grown, kTimes - 1, released);
  EXPECT_EQ(chain.live_bytes, kFirst + kStep * kTimes);
  EXPECT_EQ(first.temporaries + chain.temporaries, 0u);  // a realloc's release is not temporary
  native_free(block);
}

TEST(Native, AlignedAllocationsCountTheirExactBytesAndAreMatchedByFree) {
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  std::vector<void*> blocks = {native_posix_memalign(64, 100), native_aligned_alloc(64, 128),
                               native_memalign(128, 200), native_valloc(300), native_pvalloc(5000)};
  for (void* block : blocks) ASSERT_NE(block, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(blocks[0]) % 64, 0u);
  NativeSnapshot live = session->snapshot();
  expect_row(only_site_in(live, "native_posix_memalign"), 1, 100, 0, 0);
  expect_row(only_site_in(live, "native_aligned_alloc"), 1, 128, 0, 0);
  expect_row(only_site_in(live, "native_memalign"), 1, 200, 0, 0);
  expect_row(only_site_in(live, "native_valloc"), 1, 300, 0, 0);
  expect_row(only_site_in(live, "native_pvalloc"), 1, 5000, 0, 0);  // requested, not rounded
  free_all(blocks);
  NativeSnapshot freed = session->snapshot();
  expect_row(only_site_in(freed, "native_posix_memalign"), 1, 100, 1, 100);
  expect_row(only_site_in(freed, "native_aligned_alloc"), 1, 128, 1, 128);
  expect_row(only_site_in(freed, "native_memalign"), 1, 200, 1, 200);
  expect_row(only_site_in(freed, "native_valloc"), 1, 300, 1, 300);
  expect_row(only_site_in(freed, "native_pvalloc"), 1, 5000, 1, 5000);
  EXPECT_EQ(freed.totals.unknown_frees, 0u);
}

TEST(Native, CallocAndReallocarrayCountTheProductOfTheirArguments) {
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  void* block = native_calloc(10, 24);
  ASSERT_NE(block, nullptr);
  // Overflowing count * size: fails, and the block stays live where it was.
  errno = 0;
  EXPECT_EQ(native_reallocarray(block, SIZE_MAX / 2, 3), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  NativeSnapshot before = session->snapshot();
  expect_row(only_site_in(before, "native_calloc"), 1, 240, 0, 0);
  EXPECT_TRUE(sites_in(before, "native_reallocarray").empty());
  void* grown = native_reallocarray(block, 20, 24);
  ASSERT_NE(grown, nullptr);
  NativeSnapshot after = session->snapshot();
  expect_row(only_site_in(after, "native_calloc"), 1, 240, 1, 240);
  expect_row(only_site_in(after, "native_reallocarray"), 1, 480, 0, 0);
  EXPECT_EQ(after.totals.unknown_frees, 0u);
  native_free(grown);
}

// The threads exist before the start and are still alive at the snapshot: a thread's exit
// frees blocks glibc made without calling malloc (its tcache), which would be unknown frees.
TEST(Native, EightThreadsAllocatingAndFreeingGiveExactTotals) {
  constexpr int kThreads = 8, kBlocks = 100000, kKept = 1000;
  constexpr size_t kSize = 40;
  std::vector<std::vector<void*>> kept(kThreads, std::vector<void*>(kKept));
  std::atomic<bool> go{false}, leave{false};
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      while (!go.load()) ::usleep(100);
      native_churn(kept[t].data(), kBlocks, kKept, kSize);
      done.fetch_add(1);
      while (!leave.load()) ::usleep(100);
    });
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  go = true;
  while (done.load() < kThreads) ::usleep(1000);
  NativeSnapshot snapshot = session->snapshot();
  leave = true;
  for (auto& thread : threads) thread.join();
  SiteRow row = only_site_in(snapshot, "native_churn");
  constexpr uint64_t kAllocated = uint64_t{kThreads} * kBlocks, kFreed = uint64_t{kThreads} * (kBlocks - kKept);
  expect_row(row, kAllocated, kAllocated * kSize, kFreed, kFreed * kSize);
  EXPECT_EQ(row.temporaries, kFreed);  // each free follows its own thread's allocation
  EXPECT_EQ(snapshot.totals.unknown_frees, 0u);
  EXPECT_EQ(snapshot.totals.dropped, 0u);
  EXPECT_EQ(snapshot.totals.missed_frees, 0u);
  for (auto& blocks : kept) free_all(blocks);
  row = only_site_in(session->snapshot(), "native_churn");
  EXPECT_EQ(row.live_blocks, 0u);
  EXPECT_EQ(row.live_bytes, 0u);
}

TEST(Native, FreeOfABlockAllocatedBeforeTheStartIsAnUnknownFree) {
  void* before = native_malloc(72);
  ASSERT_NE(before, nullptr);
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  std::vector<void*> blocks(3);
  native_leak(blocks.data(), 3, 16);
  NativeSnapshot earlier = session->snapshot();
  native_free(before);
  NativeSnapshot later = session->snapshot();
  EXPECT_EQ(earlier.totals.unknown_frees, 0u);
  EXPECT_EQ(later.totals.unknown_frees, 1u);
  ASSERT_EQ(later.sites.size(), earlier.sites.size());
  for (size_t i = 0; i < later.sites.size(); ++i) {
    EXPECT_EQ(later.sites[i].return_address, earlier.sites[i].return_address);
    EXPECT_EQ(later.sites[i].frees, earlier.sites[i].frees);
    EXPECT_EQ(later.sites[i].freed_bytes, earlier.sites[i].freed_bytes);
  }
  EXPECT_EQ(later.totals.frees, earlier.totals.frees);
  EXPECT_EQ(later.totals.live_bytes, earlier.totals.live_bytes);
  free_all(blocks);
}

TEST(Native, PeakKeepsWhatEachSiteHeldAtTheMaximum) {
  std::vector<void*> first(10), second(5);  // before the start: not part of the peak
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  native_leak(first.data(), 10, 1000);
  for (void* block : first) native_free(block);
  native_leak_other(second.data(), 5, 1000);
  NativeSnapshot snapshot = session->snapshot();
  EXPECT_EQ(snapshot.totals.peak_live_bytes, 10000u);
  EXPECT_EQ(snapshot.totals.live_bytes, 5000u);
  EXPECT_EQ(only_site_in(snapshot, "native_leak").peak_live_bytes, 10000u);
  EXPECT_EQ(only_site_in(snapshot, "native_leak_other").peak_live_bytes, 0u);
  for (void* block : second) native_free(block);
}

TEST(Native, AllocationsOfALibraryLoadedAfterTheStartAreSeen) {
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  void* library = ::dlopen(NATIVE_LATE_PATH, RTLD_NOW);
  ASSERT_NE(library, nullptr) << ::dlerror();
  auto late_malloc = reinterpret_cast<void* (*)(size_t)>(::dlsym(library, "native_late_malloc"));
  ASSERT_NE(late_malloc, nullptr);
  void* block = late_malloc(333);
  expect_row(only_site_in(session->snapshot(), "native_late_malloc"), 1, 333, 0, 0);
  native_free(block);
  expect_row(only_site_in(session->snapshot(), "native_late_malloc"), 1, 333, 1, 333);
}

// The object file defining `address` ("" when none).
std::string object_at(uintptr_t address) {
  Dl_info info;
  if (::dladdr(reinterpret_cast<void*>(address), &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

// Sites inside the C runtime (libc, ld.so, libstdc++) that allocated since the start.
std::vector<SiteRow> runtime_sites(const NativeSnapshot& snapshot) {
  std::vector<SiteRow> found;
  for (const SiteRow& row : snapshot.sites) {
    std::string object = object_at(row.return_address);
    if (object.find("libc.so") != std::string::npos || object.find("ld-linux") != std::string::npos ||
        object.find("libstdc++") != std::string::npos)
      found.push_back(row);
  }
  return found;
}

// libc's own calls: strdup calls malloc inside libc (no PLT, no GOT), asprintf a malloc and a
// realloc, fopen a malloc for its FILE. The entry hooks see them, and each block is charged to
// the function that called libc, not to libc (before: to strdup+0x1a, "by library" libc.so.6).
TEST(Native, AllocationsInsideTheCRuntimeAreChargedToTheirCaller) {
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  char* copy = native_strdup("twelve bytes");
  ASSERT_NE(copy, nullptr);
  char* text = native_asprintf("number", 12345);  // "number 12345": 13 bytes
  ASSERT_NE(text, nullptr);
  void* file = native_fopen("/dev/null");
  ASSERT_NE(file, nullptr);
  NativeSnapshot snapshot = session->snapshot();
  EXPECT_TRUE(runtime_sites(snapshot).empty()) << symbol_at(runtime_sites(snapshot).front().return_address);
  expect_row(only_site_in(snapshot, "native_strdup"), 1, 13, 0, 0);
  // asprintf's steps inside libc (its first buffer, the realloc to the length) are its caller's;
  // what stays is the string.
  uint64_t live_blocks = 0, live_bytes = 0;
  for (const SiteRow& row : sites_in(snapshot, "native_asprintf")) {
    live_blocks += row.live_blocks;
    live_bytes += row.live_bytes;
  }
  EXPECT_EQ(live_blocks, 1u);
  EXPECT_EQ(live_bytes, 13u);
  SiteRow opened = only_site_in(snapshot, "native_fopen");
  EXPECT_EQ(opened.live_blocks, 1u);
  EXPECT_GT(opened.live_bytes, 0u);
  native_fclose(file);  // libc frees the FILE: the block is gone from its caller's site
  EXPECT_EQ(only_site_in(session->snapshot(), "native_fopen").live_blocks, 0u);
  native_free(copy);
  native_free(text);
}

// With stacks, the stack of a block made inside libc starts at libc's caller too.
TEST(Native, StacksOfRuntimeAllocationsStartAtTheirCaller) {
  auto session = start_session({.attribution = {.stack_depth = 4}});
  ASSERT_NE(session, nullptr);
  char* copy = native_strdup("twelve bytes");
  ASSERT_NE(copy, nullptr);
  NativeSnapshot snapshot = session->snapshot();
  SiteRow row = only_site_in(snapshot, "native_strdup");
  ASSERT_GE(row.frames.size(), 2u);
  EXPECT_EQ(symbol_at(row.frames[0]), "native_strdup");
  EXPECT_NE(object_at(row.frames[1]).find("native_tests"), std::string::npos) << object_at(row.frames[1]);
  EXPECT_TRUE(runtime_sites(snapshot).empty());
  native_free(copy);
}

// Ruby's allocator API (ruby_xmalloc & co, stand-ins in ruby_like.c) calls malloc inside Ruby:
// its blocks are charged to the extension that called it, with the bytes it asked for.
TEST(Native, BlocksOfRubysAllocatorAreChargedToItsCaller) {
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  void* array = extension_xmalloc2(10, 30);
  void* zeroed = extension_xcalloc(4, 25);
  void* empty = extension_xmalloc(0);  // Ruby asks malloc for 1 byte
  void* grown = extension_xrealloc2(extension_xmalloc(8), 2, 50);
  NativeSnapshot live = session->snapshot();
  expect_row(only_site_in(live, "extension_xmalloc2"), 1, 300, 0, 0);
  expect_row(only_site_in(live, "extension_xcalloc"), 1, 100, 0, 0);
  expect_row(only_site_in(live, "extension_xmalloc"), 2, 1 + 8, 1, 8);  // the 8 bytes, realloc'd away
  expect_row(only_site_in(live, "extension_xrealloc2"), 1, 100, 0, 0);
  for (const char* inside : {"ruby_xmalloc", "ruby_xmalloc2", "ruby_xcalloc", "ruby_xrealloc2"})
    EXPECT_TRUE(sites_in(live, inside).empty()) << inside;
  for (void* block : {array, zeroed, empty, grown}) native_free(block);
}

// A Ruby exception raised inside the allocator before its malloc (a longjmp past the hook's end)
// leaves the caller's request behind: an allocation of another size does not take it, and the
// next call of Ruby's allocator replaces it.
TEST(Native, ARubyExceptionLeavesNoRequestForOtherBlocks) {
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  ruby_like_failing_size = 777;
  volatile bool raised = false;
  if (setjmp(ruby_like_rescue) == 0)
    extension_xmalloc(777);
  else
    raised = true;
  ruby_like_failing_size = SIZE_MAX;
  ASSERT_TRUE(raised);
  void* plain = native_malloc(64);
  void* ruby = extension_xmalloc2(3, 7);
  NativeSnapshot live = session->snapshot();
  expect_row(only_site_in(live, "native_malloc"), 1, 64, 0, 0);
  expect_row(only_site_in(live, "extension_xmalloc2"), 1, 21, 0, 0);
  EXPECT_TRUE(sites_in(live, "extension_xmalloc").empty());
  native_free(plain);
  native_free(ruby);
}

TEST(Native, OnlyOneSessionAtATime) {
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  auto second = NativeSession::start();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.message(), "native: a session is already running in this process");
}

// libstdc++'s operator new calls malloc: without its own hook, every block of a C++ program was
// charged to _Znwm+0x1c (libstdc++.so.6). Each kind of new is charged to its caller, with the
// bytes asked for, and matched by its delete; std::bad_alloc still reaches the caller, and the
// thread's next allocation is recorded.
TEST(Native, OperatorNewIsChargedToItsCallerNotToLibstdcxx) {
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  void* single = native_new(40);
  void* array = native_new_array(70);
  void* aligned = native_new_aligned(96);
  void* nothrow = native_new_nothrow(24);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(aligned) % 64, 0u);
  NativeSnapshot live = session->snapshot();
  expect_row(only_site_in(live, "native_new"), 1, 40, 0, 0);
  expect_row(only_site_in(live, "native_new_array"), 1, 70, 0, 0);
  expect_row(only_site_in(live, "native_new_aligned"), 1, 96, 0, 0);
  expect_row(only_site_in(live, "native_new_nothrow"), 1, 24, 0, 0);
  for (const char* inside : {"_Znwm", "_Znam", "_ZnwmSt11align_val_t", "_ZnwmRKSt9nothrow_t"})
    EXPECT_TRUE(sites_in(live, inside).empty()) << inside;
  EXPECT_EQ(native_new_fails(), 1);
  void* after = native_new(16);
  native_delete(single);
  native_delete_array(array);
  native_delete_aligned(aligned);
  native_delete(nothrow);
  native_delete(after);
  NativeSnapshot freed = session->snapshot();
  expect_row(only_site_in(freed, "native_new"), 2, 56, 2, 56);
  expect_row(only_site_in(freed, "native_new_array"), 1, 70, 1, 70);
  expect_row(only_site_in(freed, "native_new_aligned"), 1, 96, 1, 96);
  expect_row(only_site_in(freed, "native_new_nothrow"), 1, 24, 1, 24);
  EXPECT_EQ(freed.totals.unknown_frees, 0u);
}

// With stacks, a block of operator new starts at new's caller and goes on with that caller's
// callers: the frames of new and of its hook are not in the stack.
TEST(Native, StacksOfOperatorNewStartAtItsCaller) {
  auto session = start_session({.attribution = {.stack_depth = 4}});
  ASSERT_NE(session, nullptr);
  void* single = native_new(40);
  void* aligned = native_new_aligned(96);
  NativeSnapshot live = session->snapshot();
  for (const char* function : {"native_new", "native_new_aligned"}) {
    SiteRow row = only_site_in(live, function);
    ASSERT_GE(row.frames.size(), 2u) << function;  // the caller was found in the backtrace
    EXPECT_EQ(row.frames[0], row.return_address);
    for (uintptr_t frame : row.frames) EXPECT_EQ(symbol_at(frame).rfind("_Zn", 0), std::string::npos) << function;
  }
  native_delete(single);
  native_delete_aligned(aligned);
}

TEST(Native, AlignedAllocIsHookedOnceWhenItIsMemalign) {
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  const char* names[] = {"malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
                         "aligned_alloc", "memalign", "valloc", "pvalloc",
                         // libstdc++'s operator new family, which this test program links
                         "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t",
                         "_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
                         "_ZnamSt11align_val_tRKSt9nothrow_t",
                         // the stand-ins for Ruby's allocator API it links (fixtures/ruby_like.c)
                         "ruby_xmalloc", "ruby_xmalloc2", "ruby_xcalloc", "ruby_xrealloc", "ruby_xrealloc2"};
  ASSERT_EQ(session->hooked().size(), std::size(names));
  for (const HookedAllocator& hooked : session->hooked()) {
    EXPECT_EQ(hooked.address, reinterpret_cast<uintptr_t>(::dlsym(RTLD_DEFAULT, hooked.name.c_str())));
    bool shares_address = ::dlsym(RTLD_DEFAULT, "aligned_alloc") == ::dlsym(RTLD_DEFAULT, "memalign");
    if (hooked.name == "aligned_alloc")
      EXPECT_EQ(hooked.alias_of, shares_address ? "memalign" : "");
    else
      EXPECT_EQ(hooked.alias_of, "");
  }
}

// Stop while 4 threads keep calling malloc, calloc, reallocarray and free: no crash, the
// threads keep running in the originals, and every patched byte of every allocator is back as
// it was. Each session starts before its threads (installing under load is the next test).
TEST(Native, StopWhileFourThreadsKeepAllocatingRestoresEveryByte) {
  const std::vector<std::vector<uint8_t>> before = patched_bytes();
  for (int round = 0; round < 10; ++round) {
    auto session = start_session();
    ASSERT_NE(session, nullptr);
    EXPECT_NE(first_bytes("malloc"), before[0]);  // the jump is in place
    AllocatingThreads threads;
    threads.wait_for(1000);
    EXPECT_GT(only_site_in(session->snapshot(), "native_malloc").allocations, 0u);
    session.reset();  // while the threads call
    threads.wait_for(1000);  // they still run, untracked
    EXPECT_EQ(patched_bytes(), before);
  }
}

// Starts (and stops) sessions 20 times while 4 threads keep calling the allocators: each jump
// is written with the other threads parked outside its bytes (EntryHookOptions::park_threads).
// Without the parking this crashed in free in 1 of 8 runs.
TEST(Native, StartAndStopWhileFourThreadsKeepAllocating) {
  const std::vector<std::vector<uint8_t>> before = patched_bytes();
  constexpr int kRounds = 20;
  uint64_t parkings = 0;
  {
    AllocatingThreads threads;
    for (int round = 0; round < kRounds; ++round) {
      const uint64_t parkings_before = hook::ThreadParking::parkings_so_far();
      auto session = start_session();
      ASSERT_NE(session, nullptr);
      parkings += hook::ThreadParking::parkings_so_far() - parkings_before;
      threads.wait_for(100);
      EXPECT_GT(only_site_in(session->snapshot(), "native_malloc").allocations, 0u);
    }
    threads.wait_for(1000);
  }
  // The allocator hooks go in under one parking of the four threads, not one each (6 per start
  // before); a parking is made again when a parked thread sat inside a function's first bytes,
  // which a loaded machine saw in 2 of 20 starts: counted over all of them.
  EXPECT_GE(parkings, static_cast<uint64_t>(kRounds));
  EXPECT_LT(parkings, static_cast<uint64_t>(2 * kRounds));
  EXPECT_EQ(patched_bytes(), before);
}

// Hooking the allocators while another thread sleeps: the sleep runs its full time. The jumps
// go in under an int3 with the running threads parked; a thread asleep in the kernel gets no
// signal (one used to make its nanosleep return EINTR at once).
TEST(Native, StartingASessionLeavesAnotherThreadsSleepWhole) {
  std::atomic<int> result{1};
  {
    AllocatingThreads threads;  // running threads: parked while each jump is written
    std::thread sleeper([&] {
      struct timespec pause = {0, 600 * 1000 * 1000};
      result = ::nanosleep(&pause, nullptr);
    });
    // Every thread started: one still starting has every signal blocked (glibc's
    // pthread_create), SIGTRAP included, and is then signalled like the rest.
    ::usleep(100 * 1000);
    threads.wait_for(100);
    auto session = start_session();
    ASSERT_NE(session, nullptr);
    threads.wait_for(100);
    sleeper.join();
  }
  EXPECT_EQ(result.load(), 0);
}

// fork() while 4 threads allocate: the child (only the forking thread) must never inherit a
// stripe lock held by a thread it does not have. It allocates and frees through every stripe,
// stops its copy of the session, and exits 0; a hang is killed by alarm() and fails the test.
TEST(Native, AChildForkedWhileThreadsAllocateNeverHangs) {
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) native_temporaries(100, 32);
    });
  std::vector<int> statuses;
  for (int round = 0; round < 20; ++round) {
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::alarm(10);
      native_temporaries(100000, 48);
      std::vector<void*> blocks(1000);
      native_leak(blocks.data(), 1000, 24);
      NativeSnapshot snapshot = session->snapshot();
      SiteRow row = only_site_in(snapshot, "native_leak");
      for (void* block : blocks) native_free(block);
      session.reset();  // waits for no thread: the others do not exist here
      ::_exit(row.live_blocks == 1000 ? 0 : 3);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    statuses.push_back(status);
  }
  stop = true;
  for (auto& thread : threads) thread.join();
  for (int status : statuses) {
    EXPECT_TRUE(WIFEXITED(status)) << "signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
}

TEST(Native, MemoryPerLiveBlockStaysUnder32BytesAt100000Blocks) {
  constexpr int kBlocks = 100000;
  std::vector<void*> blocks(kBlocks);  // before the start: the table holds exactly the blocks
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  native_leak(blocks.data(), kBlocks, 16);
  NativeSnapshot snapshot = session->snapshot();
  EXPECT_EQ(snapshot.totals.live_blocks, uint64_t{kBlocks});
  EXPECT_GE(snapshot.totals.table_entries, uint64_t{kBlocks});
  EXPECT_LE(snapshot.totals.block_table_bytes, 32u * snapshot.totals.table_entries);
  for (void* block : blocks) native_free(block);
  // Emptied stripes shrink back.
  EXPECT_LE(session->snapshot().totals.block_table_bytes, 64u * 4096 * 2);
}

// Two callers of native_leak: with stacks, one site each (the same first frame, inside
// native_leak, and a different second one); noinline and a call that is not the last thing they
// do, so each is a real frame of its own.
__attribute__((noinline)) void leak_from_first_caller(std::vector<void*>& blocks, int count) {
  native_leak(blocks.data(), count, 32);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void leak_from_second_caller(std::vector<void*>& blocks, int count) {
  native_leak(blocks.data(), count, 32);
  asm volatile("" ::: "memory");
}

TEST(Native, StacksTellApartTheCallersOfOneCallSite) {
  auto session = start_session({.attribution = {.stack_depth = 4}});
  ASSERT_NE(session, nullptr);
  std::vector<void*> first(11), second(23);
  leak_from_first_caller(first, 11);
  leak_from_second_caller(second, 23);
  // The test's own functions have no dynamic symbol for dladdr: a return address inside one
  // lies after its start, within a few dozen bytes, and after no other candidate's start.
  auto returns_into = [](uintptr_t address, void (*function)(std::vector<void*>&, int)) {
    auto start = reinterpret_cast<uintptr_t>(function);
    for (auto* other : {&leak_from_first_caller, &leak_from_second_caller}) {
      auto other_start = reinterpret_cast<uintptr_t>(other);
      if (other_start > start && other_start < address) return false;
    }
    return address > start && address < start + 64;
  };
  std::vector<SiteRow> rows = sites_in(session->snapshot(), "native_leak");
  ASSERT_EQ(rows.size(), 2u);
  int first_seen = 0, second_seen = 0;
  for (const SiteRow& row : rows) {
    ASSERT_GE(row.frames.size(), 3u);  // native_leak's call, the test's caller, the test body
    EXPECT_LE(row.frames.size(), 4u);
    EXPECT_EQ(row.frames[0], row.return_address);
    bool first_caller = returns_into(row.frames[1], &leak_from_first_caller);
    EXPECT_TRUE(first_caller || returns_into(row.frames[1], &leak_from_second_caller));
    (first_caller ? first_seen : second_seen)++;
    uint64_t expected = first_caller ? 11 : 23;
    expect_row(row, expected, expected * 32, 0, 0);
  }
  EXPECT_EQ(first_seen, 1);
  EXPECT_EQ(second_seen, 1);
  free_all(first);
  free_all(second);
}

TEST(Native, WithoutStacksASiteIsItsCallerAlone) {
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  std::vector<void*> first(11), second(23);
  leak_from_first_caller(first, 11);
  leak_from_second_caller(second, 23);
  SiteRow row = only_site_in(session->snapshot(), "native_leak");
  EXPECT_EQ(row.frames.size(), 1u);
  expect_row(row, 34, 34 * 32, 0, 0);
  free_all(first);
  free_all(second);
}

TEST(Native, AStackDepthBeyondTheLimitIsRefused) {
  auto session = NativeSession::start({.attribution = {.stack_depth = kMaxStackDepth + 1}});
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.message(), "native: a stack depth is 1 to 32 frames, not 33");
  EXPECT_TRUE(NativeSession::start({.attribution = {.stack_depth = 0}}).message().find("not 0") != std::string::npos);
}

// A stand-in for the agent's Ruby location source: this thread's "Ruby file and line".
thread_local const char* t_ruby_path = nullptr;
thread_local uint32_t t_ruby_line = 0;
bool test_ruby_location(const char** path, uint32_t* line) noexcept {
  if (t_ruby_path == nullptr) return false;
  *path = t_ruby_path;
  *line = t_ruby_line;
  return true;
}

void leak_at(const char* path, uint32_t line, std::vector<void*>& blocks, int count) {
  t_ruby_path = path;
  t_ruby_line = line;
  native_leak(blocks.data(), count, 64);
  t_ruby_path = nullptr;
}

TEST(Native, RubyLinesSplitACallSiteAndKeepTheirFileNames) {
  auto session = start_session({.attribution = {.ruby_location = &test_ruby_location}});
  ASSERT_NE(session, nullptr);
  std::vector<void*> a5(5), a7(7), b5(9), moved(3), reused(4), none(2);
  leak_at("app/a.rb", 5, a5, 5);
  leak_at("app/a.rb", 7, a7, 7);
  leak_at("app/b.rb", 5, b5, 9);
  // The same name at another address (a String Ruby moved) is the same file; the same address
  // holding another name (a String freed and reused) is another file.
  char buffer[32];
  std::strcpy(buffer, "app/a.rb");
  leak_at(buffer, 7, moved, 3);
  std::strcpy(buffer, "app/c.rb");
  leak_at(buffer, 7, reused, 4);
  native_leak(none.data(), 2, 64);
  NativeSnapshot snapshot = session->snapshot();
  std::map<std::string, uint64_t> blocks_by_line;
  for (const SiteRow& row : sites_in(snapshot, "native_leak")) {
    ASSERT_LT(row.ruby_file, snapshot.ruby_files.size());
    std::string where = row.ruby_file == 0 ? "-" : snapshot.ruby_files[row.ruby_file] + ":" + std::to_string(row.ruby_line);
    blocks_by_line[where] += row.live_blocks;
  }
  std::map<std::string, uint64_t> expected = {{"app/a.rb:5", 5}, {"app/a.rb:7", 10}, {"app/b.rb:5", 9},
                                              {"app/c.rb:7", 4}, {"-", 2}};
  EXPECT_EQ(blocks_by_line, expected);
  EXPECT_EQ(snapshot.ruby_files.size(), 5u);  // "", "(other files)", a, b, c
  for (auto* blocks : {&a5, &a7, &b5, &moved, &reused, &none}) free_all(*blocks);
}

TEST(Native, RubyLinesOfManyThreadsAreExact) {
  auto session = start_session({.attribution = {.stack_depth = 3, .ruby_location = &test_ruby_location}});
  ASSERT_NE(session, nullptr);
  constexpr int kThreads = 8, kRounds = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t] {
      std::string path = "thread_" + std::to_string(t) + ".rb";
      for (int i = 0; i < kRounds; ++i) {
        t_ruby_path = path.c_str();
        t_ruby_line = static_cast<uint32_t>(i % 10 + 1);
        void* kept = native_malloc(16);
        native_temporaries(1, 100);
        (void)kept;  // leaked on purpose: one live block per round
      }
      t_ruby_path = nullptr;
    });
  for (auto& thread : threads) thread.join();
  NativeSnapshot snapshot = session->snapshot();
  std::map<std::string, uint64_t> live;
  for (const SiteRow& row : sites_in(snapshot, "native_malloc"))
    live[snapshot.ruby_files[row.ruby_file] + ":" + std::to_string(row.ruby_line)] += row.live_blocks;
  ASSERT_EQ(live.size(), size_t{kThreads * 10});
  for (const auto& [where, blocks] : live) EXPECT_EQ(blocks, uint64_t{kRounds / 10}) << where;
  uint64_t temporaries = 0;
  for (const SiteRow& row : sites_in(snapshot, "native_temporaries")) temporaries += row.temporaries;
  EXPECT_EQ(temporaries, uint64_t{kThreads * kRounds});
}

TEST(Native, SitesBeyondTheTableAreCountedTogetherAndExactly) {
  auto session = start_session({.attribution = {.ruby_location = &test_ruby_location}});
  ASSERT_NE(session, nullptr);
  // One site per Ruby line: more lines than the table holds.
  constexpr uint32_t kLines = CallSiteTable::kCapacity + 5000;
  t_ruby_path = "many_lines.rb";
  for (uint32_t line = 1; line <= kLines; ++line) {
    t_ruby_line = line;
    native_free(native_malloc(8));
  }
  t_ruby_path = nullptr;
  NativeSnapshot snapshot = session->snapshot();
  uint64_t at_lines = 0, beyond = 0;
  for (const SiteRow& row : snapshot.sites) {
    if (row.return_address == 0) beyond += row.allocations;
    else if (row.ruby_file != 0 && snapshot.ruby_files[row.ruby_file] == "many_lines.rb") at_lines += row.allocations;
  }
  EXPECT_EQ(at_lines + beyond, kLines);
  EXPECT_GE(beyond, 5000u);
  EXPECT_EQ(snapshot.totals.frees, snapshot.totals.allocations);
}

TEST(Native, AnonymousMappingsAreBlocksWithMmap) {
  auto session = start_session({.track_mmap = true});
  ASSERT_NE(session, nullptr);
  constexpr size_t kRegion = 64 * 1024;
  std::vector<void*> regions;
  for (int i = 0; i < 6; ++i) regions.push_back(native_mmap(kRegion));
  for (void* region : regions) ASSERT_NE(region, nullptr);
  int fd = ::open("/proc/self/exe", O_RDONLY);
  ASSERT_GE(fd, 0);
  void* file_region = native_mmap_file(fd, 4096);  // a file's pages: not counted
  ASSERT_NE(file_region, nullptr);
  ASSERT_EQ(native_munmap(regions[0], kRegion), 0);  // whole
  ASSERT_EQ(native_munmap(regions[1], 16 * 1024), 0);  // its first 16 KiB: still one live block
  void* grown = native_mremap(regions[2], kRegion, 2 * kRegion);
  ASSERT_NE(grown, nullptr);
  NativeSnapshot snapshot = session->snapshot();
  // Freed at the mmap site: regions[0], regions[2] (moved by mremap, as realloc) and 16 KiB.
  expect_row(only_site_in(snapshot, "native_mmap"), 6, 6 * kRegion, 2, 2 * kRegion + 16 * 1024);
  expect_row(only_site_in(snapshot, "native_mremap"), 1, 2 * kRegion, 0, 0);
  EXPECT_TRUE(sites_in(snapshot, "native_mmap_file").empty());
  EXPECT_EQ(snapshot.totals.unknown_frees, 0u);
  // The rest of the partly unmapped region, then everything.
  ASSERT_EQ(native_munmap(static_cast<char*>(regions[1]) + 16 * 1024, kRegion - 16 * 1024), 0);
  ASSERT_EQ(native_munmap(grown, 2 * kRegion), 0);
  for (int i = 3; i < 6; ++i) ASSERT_EQ(native_munmap(regions[i], kRegion), 0);
  snapshot = session->snapshot();
  expect_row(only_site_in(snapshot, "native_mmap"), 6, 6 * kRegion, 6, 6 * kRegion);
  expect_row(only_site_in(snapshot, "native_mremap"), 1, 2 * kRegion, 1, 2 * kRegion);
  ::munmap(file_region, 4096);
  ::close(fd);
}

TEST(Native, MappingsAreNotTrackedWithoutMmapAndTheirBytesComeBack) {
  auto mapping_bytes = [] {
    std::vector<std::vector<uint8_t>> bytes;
    for (const char* name : {"mmap", "munmap", "mremap"}) bytes.push_back(first_bytes(name));
    return bytes;
  };
  auto before = mapping_bytes();
  {
    auto session = start_session({.track_mmap = true});
    ASSERT_NE(session, nullptr);
    EXPECT_NE(mapping_bytes(), before);
  }
  EXPECT_EQ(mapping_bytes(), before);
  auto session = start_session();
  ASSERT_NE(session, nullptr);
  void* region = native_mmap(4096);
  EXPECT_TRUE(sites_in(session->snapshot(), "native_mmap").empty());
  native_munmap(region, 4096);
}

}  // namespace
}  // namespace memprof::native
