// The live-object table: object address -> (allocation site, builtin type, generation).
//
// Objects live in pages of fixed-size slots, and an allocator hands out neighbouring slots
// one after another. So the table mirrors the heap: one chunk per 16 KB of address space that
// holds tracked objects, with a 4-byte site, a 4-byte generation and a 1-byte type per 40-byte
// slot position (every Ruby slot size is a multiple of 40 and slots start at multiples of it).
// Recording is a store into the current chunk (a run of allocations stays in one page), not a
// random cache miss as in a hash table keyed by address (which made the allocation loop of
// docs/ruby.md 1.57x plain instead of 1.43x). A chunk costs ~3.7 KB per 16 KB page: ~9 bytes
// per slot, so a page full of live tracked objects costs 9 bytes each; pages with few
// survivors cost more per survivor until a prune frees their chunk.
//
// The generation (the runtime's GC count at the allocation, as Ruby's allocation tracing
// records it) goes into annotated heap dumps, where `memprof diff` needs it to tell a new
// object from an old one in a slot the old one left: without it, dumps of a running process
// could only be compared by address, class and site.
//
// record() runs inside allocation hooks: it never throws and never calls back into the
// runtime; if memory runs out the record is dropped and counted in dropped().
//
// The table needs no free events: a runtime adapter (src/ruby/) decides liveness by comparing
// an entry's recorded type with the slot's current type, and calls retain_if() to drop the dead
// ones. Recording an address that is already present overwrites it: a slot reused by a seen
// allocation always carries the newest site.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace memprof::track {

struct LiveEntry {
  uintptr_t address;
  uint32_t site;        // SiteTable id
  uint32_t generation;  // the runtime's GC count when the object was allocated
  uint8_t type;         // the runtime's type tag at allocation (Ruby: RB_BUILTIN_TYPE); never 0
  bool in_window = false;  // recorded while an allocation window was open (see kInWindow)
};

class LiveTable {
 public:
  static constexpr size_t kSlotGranularity = 40;
  static constexpr unsigned kChunkShift = 14;  // 16 KB of address space per chunk
  // Below this many entries a prune (a walk over every heap page) costs more than it saves.
  static constexpr size_t kMinPruneThreshold = 256 * 1024;
  // Or'ed into the type given to record(): the entry was allocated inside an allocation window
  // (`memprof report -p`), which wants the objects born in it. Runtime type tags stay below
  // it (Ruby's RUBY_T_MASK is 0x1f); entries read back carry it as LiveEntry::in_window.
  static constexpr uint8_t kInWindow = 0x80;

  LiveTable() = default;
  LiveTable(const LiveTable&) = delete;
  LiveTable& operator=(const LiveTable&) = delete;
  ~LiveTable();

  // Inserts or overwrites. `type` must not be 0 (0 marks an empty position); it may carry
  // kInWindow. Never throws; addresses that are not a multiple of kSlotGranularity, and
  // records that find no memory, are dropped and counted.
  void record(uintptr_t address, uint32_t site, uint8_t type, uint32_t generation) noexcept {
    if (address % kSlotGranularity != 0 || type == 0) [[unlikely]] {
      ++dropped_;
      return;
    }
    uintptr_t key = address >> kChunkShift;
    const RecentChunk& recent = recent_[recent_index(key)];
    Chunk* chunk = recent.key == key ? recent.chunk : chunk_for(key);
    if (chunk == nullptr) [[unlikely]] {
      ++dropped_;
      return;
    }
    size_t i = address / kSlotGranularity - chunk->first_slot;
    if (chunk->types()[i] == 0) {
      ++chunk->live;
      ++size_;
    }
    chunk->sites()[i] = site;
    chunk->generations_[i] = generation;
    chunk->types()[i] = type;
  }
  // Removes one address if present, and returns what it held.
  std::optional<LiveEntry> erase(uintptr_t address) noexcept;
  std::optional<LiveEntry> find(uintptr_t address) const noexcept;

  // Keeps the entries for which keep(entry) is true; returns how many were removed. Chunks
  // left empty are freed.
  template <typename Keep>
  size_t retain_if(Keep&& keep) noexcept;
  // Replaces every key by new_address(entry) (GC compaction moves objects); entries mapped to
  // 0 are dropped. On allocation failure the table is emptied and false is returned, because
  // keeping stale keys would credit moved-in objects to the wrong site.
  template <typename NewAddress>
  bool rekey(NewAddress&& new_address) noexcept;

  template <typename Visit>
  void for_each(Visit&& visit) const noexcept {
    for (const auto& [key, chunk] : chunks_) {
      const uint8_t* types = chunk->types();
      for (size_t i = 0; i < kSlotsPerChunk; ++i)
        if (types[i] != 0) visit(entry_at(*chunk, i));
    }
  }
  // Every entry stops being in the window (it closed).
  void clear_window_marks() noexcept;

  void clear() noexcept;
  size_t size() const { return size_; }
  size_t chunk_count() const { return chunks_.size(); }
  size_t memory_bytes() const;
  size_t dropped() const { return dropped_; }
  // True when the table has doubled since the last retain_if/clear: time for the runtime to
  // prune dead entries (the lazy part of the free-event-less scheme).
  bool wants_prune() const { return size_ >= prune_threshold_; }

 private:
  // Slot starts a 16 KB window can hold, counted from the slot straddling its first byte:
  // floor((W + 16383) / 40) - floor(W / 40) <= 410, so 411 positions.
  static constexpr size_t kSlotsPerChunk = ((size_t{1} << kChunkShift) / kSlotGranularity) + 2;

  struct Chunk {
    uintptr_t first_slot;  // address / kSlotGranularity of position 0
    uint32_t live;         // non-empty positions
    uint32_t sites_[kSlotsPerChunk];
    uint32_t generations_[kSlotsPerChunk];
    uint8_t types_[kSlotsPerChunk];
    uint32_t* sites() { return sites_; }
    const uint32_t* sites() const { return sites_; }
    uint8_t* types() { return types_; }
    const uint8_t* types() const { return types_; }
  };
  static LiveEntry entry_at(const Chunk& chunk, size_t i) {
    uint8_t raw = chunk.types()[i];
    return LiveEntry{(chunk.first_slot + i) * kSlotGranularity, chunk.sites()[i],
                     chunk.generations_[i], static_cast<uint8_t>(raw & ~kInWindow),
                     (raw & kInWindow) != 0};
  }

  // The chunk for `key`, created if missing (nullptr when out of memory); becomes a recent one.
  Chunk* chunk_for(uintptr_t key) noexcept;
  void free_chunk(uintptr_t key) noexcept;
  void after_prune() noexcept;

  std::unordered_map<uintptr_t, Chunk*> chunks_;
  static constexpr uintptr_t kNoKey = ~uintptr_t{0};  // no address maps to it
  // The chunks used last, direct-mapped by key: Ruby 3.2+ allocates from one page per size
  // pool (a loop making Strings, Arrays and Hashes alternates between three or four pages), so
  // remembering only the last chunk sent most records to the hash map. Fibonacci hashing
  // spreads the keys of 64 KB-aligned pages, which share their low bits.
  struct RecentChunk {
    uintptr_t key = kNoKey;
    Chunk* chunk = nullptr;
  };
  static constexpr unsigned kRecentBits = 5;
  static size_t recent_index(uintptr_t key) {
    return static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> (64 - kRecentBits));
  }
  std::array<RecentChunk, size_t{1} << kRecentBits> recent_{};
  size_t size_ = 0;
  size_t dropped_ = 0;
  size_t prune_threshold_ = kMinPruneThreshold;
};

template <typename Keep>
size_t LiveTable::retain_if(Keep&& keep) noexcept {
  size_t removed = 0;
  std::vector<uintptr_t> empty;
  for (auto& [key, chunk] : chunks_) {
    uint8_t* types = chunk->types();
    for (size_t i = 0; i < kSlotsPerChunk; ++i) {
      if (types[i] == 0) continue;
      if (keep(static_cast<const LiveEntry&>(entry_at(*chunk, i)))) continue;
      types[i] = 0;
      --chunk->live;
      --size_;
      ++removed;
    }
    if (chunk->live == 0) {
      try {
        empty.push_back(key);
      } catch (...) {
        // An empty chunk that stays is harmless; it is retried at the next prune.
      }
    }
  }
  for (uintptr_t key : empty) free_chunk(key);
  after_prune();
  return removed;
}

template <typename NewAddress>
bool LiveTable::rekey(NewAddress&& new_address) noexcept {
  std::vector<LiveEntry> moved;
  try {
    moved.reserve(size_);
  } catch (...) {
    clear();
    return false;
  }
  for_each([&](const LiveEntry& e) {
    LiveEntry m = e;
    m.address = new_address(static_cast<const LiveEntry&>(e));
    if (m.address != 0) moved.push_back(m);
  });
  clear();
  size_t dropped_before = dropped_;
  for (const LiveEntry& e : moved)
    record(e.address, e.site, static_cast<uint8_t>(e.type | (e.in_window ? kInWindow : 0)),
           e.generation);
  after_prune();
  if (dropped_ != dropped_before) {
    clear();
    return false;
  }
  return true;
}

}  // namespace memprof::track
