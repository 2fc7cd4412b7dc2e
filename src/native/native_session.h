// One `memprof native` session inside the process: hooks the malloc family at its entry
// (allocator_hooks.h), keeps every block allocated since the start with its call site
// (engine.h), and reads out per-site counts. One session at a time per process.
//
//   auto session = NativeSession::start();
//   if (!session.ok()) { report(session.message()); return; }
//   NativeSnapshot now = (*session)->snapshot();   // any thread, any time
//   session->reset();                              // unhooks, every byte restored
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/util/result.h"
#include "native/allocator_hooks.h"
#include "native/site_key.h"

namespace memprof::native {

class Engine;

struct NativeOptions {
  // How long the stop waits for threads still inside a hook before it gives up and leaves the
  // engine's memory mapped (never unmapped under a running thread).
  unsigned stop_timeout_ms = 5000;
  Attribution attribution;  // what makes a site: stack depth, Ruby lines (site_key.h)
  bool track_mmap = false;  // also anonymous mmap/munmap/mremap (engine.h)
};

// What a site, or the whole session, allocated and freed since the start.
struct AllocationCounts {
  uint64_t allocations = 0;
  uint64_t allocated_bytes = 0;
  uint64_t frees = 0;
  uint64_t freed_bytes = 0;
  uint64_t temporaries = 0;       // see engine.h
  uint64_t live_blocks = 0;       // allocations - frees
  uint64_t live_bytes = 0;        // allocated_bytes - freed_bytes

  AllocationCounts& operator+=(const AllocationCounts& other) {
    allocations += other.allocations;
    allocated_bytes += other.allocated_bytes;
    frees += other.frees;
    freed_bytes += other.freed_bytes;
    temporaries += other.temporaries;
    live_blocks += other.live_blocks;
    live_bytes += other.live_bytes;
    return *this;
  }
};

// One site: the stack of the call to the allocator (its return address first) and the Ruby line
// of the thread, and its counts since the start.
struct SiteRow : AllocationCounts {
  uintptr_t return_address = 0;  // 0: the sites beyond the table's capacity, together
  std::vector<uintptr_t> frames;  // return_address first; empty for the sites beyond capacity
  uint32_t ruby_file = 0;         // index into NativeSnapshot::ruby_files; 0: no Ruby line
  uint32_t ruby_line = 0;
  uint64_t peak_live_bytes = 0;   // live bytes near the moment of the peak (peak_tracker.h)
};

// The sum of every site's counts, and what belongs to the session as a whole.
struct NativeTotals : AllocationCounts {
  uint64_t unknown_frees = 0;   // frees/reallocs of blocks allocated before the start
  uint64_t peak_live_bytes = 0;         // the maximum of live_bytes since the start
  uint64_t peak_copy_live_bytes = 0;    // live bytes when the sites' peak_live_bytes were taken
  uint64_t missed_frees = 0;    // addresses allocated again while recorded live (a free not seen)
  uint64_t dropped = 0;         // allocations not recorded (no memory for the table)
  uint64_t engine_bytes = 0;    // memory the engine maps for its tables and thread slots
  uint64_t block_table_bytes = 0;  // of which the live-block table
  uint64_t table_entries = 0;   // live-block entries, the engine's own blocks included
};

struct NativeSnapshot {
  std::vector<SiteRow> sites;  // sites with at least one allocation, in no particular order
  // Ruby file names by id: [0] "" (no Ruby line), [1] "(other files)" (beyond the capacity).
  std::vector<std::string> ruby_files;
  NativeTotals totals;
};

// What the calling thread allocates from now on is recorded apart and never reported (the
// agent's own thread: its replies are not the program's memory).
void ignore_this_thread() noexcept;
// In a forked child whose session nobody reads (the agent's children): the hooks, copied with
// the process, go straight to the allocator from now on. Only an atomic store: safe right
// after fork, whatever lock the parent's other threads held.
void stop_recording_in_child() noexcept;

class NativeSession {
 public:
  static Result<std::unique_ptr<NativeSession>> start(NativeOptions options = {});
  ~NativeSession();  // unhooks and releases the tables (see NativeOptions::stop_timeout_ms)
  NativeSession(const NativeSession&) = delete;
  NativeSession& operator=(const NativeSession&) = delete;

  NativeSnapshot snapshot() const;
  const std::vector<HookedAllocator>& hooked() const { return hooks_->hooked(); }
  // Functions that could not be hooked (their calls are not seen).
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  NativeSession() = default;
  NativeOptions options_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<AllocatorHooks> hooks_;
  std::vector<std::string> problems_;
};

}  // namespace memprof::native
