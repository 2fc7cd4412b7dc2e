// Call sites of the allocator: a site's key (site_key.h: stack, Ruby line) -> a dense site id,
// its key and its counters.
//
// Lock-free, fixed capacity: an InternIndex of key hashes, and counter rows and keys in chunks
// mapped on first use, so memory follows the number of sites seen. Site 0 holds the engine's
// own blocks (never reported); site 1 collects every site beyond the capacity (reported with
// return address 0 and no frames).
//
// intern() and the counters are used inside allocator hooks: no malloc, no throw, errno kept.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/util/result.h"
#include "native/intern_index.h"
#include "native/site_key.h"

namespace memprof::native {

inline constexpr uint32_t kInternalSite = 0;
inline constexpr uint32_t kOverflowSite = 1;

struct alignas(64) SiteCounters {
  std::atomic<uintptr_t> return_address;  // the key's first frame; set (after the key) when ready
  std::atomic<uint64_t> allocations;
  std::atomic<uint64_t> allocated_bytes;
  std::atomic<uint64_t> frees;
  std::atomic<uint64_t> freed_bytes;
  std::atomic<uint64_t> temporaries;  // frees of the thread's latest allocation (see engine.h)
  std::atomic<uint64_t> peak_live_bytes;  // live bytes at the last peak snapshot (peak_tracker.h)
};
static_assert(sizeof(SiteCounters) == 64);

class CallSiteTable {
 public:
  // 4 MB of (hash, id) pairs, pages backed as they are touched: stacks and Ruby lines make
  // many more sites than return addresses alone (a Rails app: ~100,000 at --stack 4).
  static constexpr size_t kSlots = size_t{1} << 18;
  static constexpr size_t kRowsPerChunk = 1024;         // 64 KB of counters (272 KB of keys) per chunk
  static constexpr size_t kChunks = kSlots * 3 / 4 / kRowsPerChunk;
  static constexpr uint32_t kCapacity = kChunks * kRowsPerChunk;  // sites, the two fixed ones included

  static Result<std::unique_ptr<CallSiteTable>> create();
  ~CallSiteTable();
  CallSiteTable(const CallSiteTable&) = delete;
  CallSiteTable& operator=(const CallSiteTable&) = delete;

  // The id of the site `key`, made on first sight; kOverflowSite when full.
  uint32_t intern(const SiteKey& key) noexcept;
  SiteCounters& row(uint32_t id) noexcept { return chunks_[id / kRowsPerChunk].load(std::memory_order_acquire)[id % kRowsPerChunk]; }
  // The key of a ready row (below).
  const SiteKey& key(uint32_t id) const noexcept { return key_chunks_[id / kRowsPerChunk].load(std::memory_order_acquire)[id % kRowsPerChunk]; }
  // Ids below this may be in use; a row is ready when its chunk exists and its return address
  // (or, for the fixed sites, its id) is set: see ready_row().
  uint32_t id_limit() const noexcept;
  SiteCounters* ready_row(uint32_t id) const noexcept;
  size_t mapped_bytes() const noexcept;

 private:
  CallSiteTable() = default;
  bool map_chunk(uint32_t id) noexcept;
  uint32_t new_id(const SiteKey& key) noexcept;

  InternIndex index_;
  std::atomic<SiteCounters*> chunks_[kChunks] = {};
  std::atomic<SiteKey*> key_chunks_[kChunks] = {};
  std::atomic<uint32_t> next_id_{2};
  std::atomic<size_t> chunk_bytes_{0};
};

}  // namespace memprof::native
