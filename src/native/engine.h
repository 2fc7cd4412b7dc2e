// What the allocator hooks record into: the live blocks, the call sites and the peak, and the
// rules that turn allocator calls into counts.
//
// Rules (docs/native.md):
// - an allocation counts at its call site: one allocation, its requested bytes;
// - a free of a live block counts at the block's site: one free, its bytes; a free of an address
//   not in the table (allocated before the start) is an "unknown free" and changes no site;
// - realloc of a live block is a free of the old block plus an allocation of the new one at the
//   realloc's call site (a chain of N reallocs after a malloc: N+1 allocations, N frees);
//   realloc(p, 0) that returns NULL is a free; a failed realloc changes nothing;
// - with --mmap, an anonymous mmap is an allocation of its length, mremap a realloc, and munmap
//   a free (see on_unmap);
// - temporary (heaptrack's definition): a free of the block the same thread allocated last,
//   with no allocation by that thread in between. The release inside a realloc is not one.
// - blocks allocated by the engine's own work (ScopedInternal) go to site 0, never reported.
// - a site is the allocator's caller, the stack above it up to the attribution's depth and the
//   Ruby line of the thread (site_key.h); sites differing in any of them are counted apart.
//   A caller inside the C/C++ runtime (strdup's malloc) gives way to the first frame outside it
//   (runtime_code.h), found by unwinding (libunwind, or glibc's backtrace).
//
// Every method runs inside a hook, inside a recording window: no malloc, no throw.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "core/util/result.h"
#include "native/block_table.h"
#include "native/call_site_table.h"
#include "native/peak_tracker.h"
#include "native/recording_window.h"
#include "native/ruby_file_table.h"
#include "native/runtime_code.h"
#include "native/stack_unwinder.h"

namespace memprof::native {

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> create(const Attribution& attribution);

  void on_allocation(ThreadHookState& thread, void* block, uint64_t size, uintptr_t caller) noexcept;
  void on_free(ThreadHookState& thread, void* block) noexcept;
  // realloc in two steps around the original call: take the old block out of the table first
  // (another thread may receive its address as soon as the original frees it), then record
  // the outcome. `requested` is SIZE_MAX when the size overflowed (reallocarray).
  bool take_for_resize(void* old_block, BlockRecord* previous) noexcept;
  void on_resized(ThreadHookState& thread, void* old_block, const BlockRecord* previous,
                  void* new_block, uint64_t requested, uintptr_t caller) noexcept;

  // munmap (--mmap): unmapping a recorded region from its start releases it; unmapping only its
  // first `length` bytes releases those bytes and keeps the rest live (no free is counted until
  // the last byte goes). Ranges not starting at a recorded region change nothing.
  void on_unmap(ThreadHookState& thread, void* address, uint64_t length) noexcept;

  // Around fork() (fork_guard.h): the block table's locks.
  void lock_for_fork() noexcept { blocks_.lock_all(); }
  void unlock_after_fork() noexcept { blocks_.unlock_all(); }

  CallSiteTable& sites() noexcept { return *sites_; }
  const RubyFileTable* ruby_files() const noexcept { return ruby_files_.get(); }
  const BlockTable& blocks() const noexcept { return blocks_; }
  const PeakTracker& peak() const noexcept { return peak_; }
  uint64_t unknown_frees() const noexcept { return unknown_frees_.load(std::memory_order_relaxed); }
  uint64_t missed_frees() const noexcept { return missed_frees_.load(std::memory_order_relaxed); }
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  size_t mapped_bytes() const noexcept {
    return blocks_.mapped_bytes() + sites_->mapped_bytes() + (ruby_files_ ? ruby_files_->mapped_bytes() : 0);
  }

 private:
  Engine() = default;
  void account_release(const BlockRecord& record, bool temporary) noexcept;
  uint32_t site_of(ThreadHookState& thread, uintptr_t caller) noexcept;
  // The site's frames into `out` (kMaxStackDepth of room); returns how many.
  uint32_t frames_of(uintptr_t caller, uintptr_t* out) const noexcept;

  Attribution attribution_;
  std::optional<StackUnwinder> unwinder_;        // libunwind when stack_depth > 1; else any, if one works
  RuntimeCode runtime_;
  std::unique_ptr<RubyFileTable> ruby_files_;    // when there is a Ruby location source
  BlockTable blocks_;
  std::unique_ptr<CallSiteTable> sites_;
  PeakTracker peak_;
  std::atomic<uint64_t> unknown_frees_{0};
  std::atomic<uint64_t> missed_frees_{0};  // an address allocated again while we thought it live
  std::atomic<uint64_t> dropped_{0};       // allocations the table could not hold
};

}  // namespace memprof::native
