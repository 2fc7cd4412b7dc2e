// Live blocks: address -> (size, call site) for every block allocated since the session began.
//
// Sharded by a hash of the address into kStripes stripes, each an open-addressing table with
// linear probing in its own mmap and a spin lock: threads allocating at the same time rarely
// meet on one lock. A slot is 16 bytes (address; size in 40 bits and site id in 24). A stripe
// grows by 1.5x when it is 80% full and shrinks to half full when it falls below 20%, always
// by rehashing into a fresh mapping, so a live block costs 16 / load = 20..30 bytes. Removal
// shifts the following entries back (no tombstones, no degradation over time).
//
// Called from inside allocator hooks: never allocates with malloc, never throws, preserves
// errno. When a stripe cannot grow (mmap failed) an insert is refused and the caller counts
// it as dropped.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/util/scoped_fd.h"
#include "native/spin_lock.h"

namespace memprof::native {

struct BlockRecord {
  uint64_t size = 0;
  uint32_t site = 0;
};

enum class InsertOutcome {
  kInserted,
  kReplaced,  // the address was already live: its free was missed; `replaced` holds the old one
  kDropped,   // no memory for the entry, or a size beyond kMaxBlockSize
};

class BlockTable {
 public:
  static constexpr size_t kStripes = 64;
  static constexpr uint64_t kMaxBlockSize = (uint64_t{1} << 40) - 1;  // 1 TiB
  static constexpr uint32_t kMaxSiteId = (uint32_t{1} << 24) - 1;

  BlockTable() = default;
  BlockTable(const BlockTable&) = delete;
  BlockTable& operator=(const BlockTable&) = delete;

  InsertOutcome insert(uintptr_t address, uint64_t size, uint32_t site, BlockRecord* replaced) noexcept;
  // Removes `address`; false when it is not live here.
  bool take(uintptr_t address, BlockRecord* record) noexcept;

  // fork(): every stripe lock held across it, so that the child (whose only thread is the
  // forking one) never inherits a stripe locked by a thread that does not exist there.
  void lock_all() noexcept;
  void unlock_all() noexcept;

  size_t entries() const noexcept;       // live entries, the engine's own blocks included
  size_t mapped_bytes() const noexcept;  // memory of the stripes' tables

 private:
  struct Slot {
    uint64_t address;  // 0: empty
    uint64_t packed;   // size << 24 | site
  };
  struct alignas(64) Stripe {
    SpinLock lock;
    ScopedMmap mapping;
    Slot* slots = nullptr;
    size_t capacity = 0;  // slots
    size_t count = 0;
  };

  static bool resize(Stripe& stripe, size_t capacity) noexcept;
  static Slot* find(const Stripe& stripe, uint64_t hash, uintptr_t address) noexcept;

  Stripe stripes_[kStripes];
};

}  // namespace memprof::native
