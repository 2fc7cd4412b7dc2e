// A lock-free index from a key's 64-bit hash to a dense id, for tables used inside allocator
// hooks (call sites, Ruby file names): an open-addressing array of (hash, id) slots claimed by
// compare-and-swap. The key itself lives with the id (the caller's storage); two keys with the
// same hash are told apart by the caller's `equal`, and probing goes on past a slot whose key
// differs. No malloc, no lock, no throw.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/util/scoped_fd.h"
#include "native/zeroed_memory.h"

namespace memprof::native {

inline constexpr uint32_t kNoId = 0;  // never a key's id

// Mixes one word into a running hash (a multiply-xorshift step; spreads every input bit).
inline uint64_t mix_hash(uint64_t hash, uint64_t word) noexcept {
  hash ^= word + 0x9E3779B97F4A7C15ull + (hash << 6) + (hash >> 2);
  hash *= 0xBF58476D1CE4E5B9ull;
  return hash ^ (hash >> 31);
}

class InternIndex {
 public:
  // `slots` must be a power of two; the slots come from one mapping, zeroed.
  bool map(size_t slots) noexcept {
    void* memory = map_zeroed(slots * sizeof(Slot));
    if (memory == nullptr) return false;
    mapping_ = ScopedMmap(memory, slots * sizeof(Slot));
    slots_ = static_cast<Slot*>(memory);
    mask_ = slots - 1;
    return true;
  }
  size_t mapped_bytes() const noexcept { return mapping_.size(); }

  // The id of the key with this hash for which equal(id) holds, or make()'s new id. `overflow`
  // when the owner's storage is full (make() says so too, for a race at the last id), when
  // every slot is taken, or when a slot's owner never published its id (a thread copied into a
  // forked child). Once the storage is full no slot is claimed any more: a key not in the table
  // ends its probe at the first empty slot, so a full table still costs a few probes, not a scan.
  template <typename Equal, typename Make>
  uint32_t intern(uint64_t hash, Equal equal, Make make, bool full, uint32_t overflow) noexcept {
    if (hash == 0) hash = 1;  // 0 marks an empty slot
    for (size_t i = hash & mask_, probes = 0; probes <= mask_; i = (i + 1) & mask_, ++probes) {
      Slot& slot = slots_[i];
      uint64_t key = slot.hash.load(std::memory_order_acquire);
      if (key == 0) {
        if (full) return overflow;
        if (slot.hash.compare_exchange_strong(key, hash, std::memory_order_acq_rel)) {
          uint32_t id = make();
          slot.id.store(id, std::memory_order_release);
          return id;
        }
        // Lost the slot: `key` now holds the winner's hash.
      }
      if (key != hash) continue;
      uint32_t id = published_id(slot);
      if (id == kNoId || id == overflow || equal(id)) return id == kNoId ? overflow : id;
    }
    return overflow;
  }

 private:
  struct Slot {
    std::atomic<uint64_t> hash;
    std::atomic<uint32_t> id;  // kNoId until published
  };
  // A claimed slot whose id is not published yet: wait this many turns, then give up on it.
  static constexpr unsigned kPublishWaits = 10000;

  static uint32_t published_id(const Slot& slot) noexcept {
    for (unsigned waits = 0; waits < kPublishWaits; ++waits) {
      uint32_t id = slot.id.load(std::memory_order_acquire);
      if (id != kNoId) return id;
      ::sched_yield();
    }
    return kNoId;
  }

  ScopedMmap mapping_;
  Slot* slots_ = nullptr;
  size_t mask_ = 0;
};

}  // namespace memprof::native
