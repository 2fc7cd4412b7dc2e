#include "heap/address_index.h"

#include <algorithm>
#include <bit>
#include <vector>

#include "heap/run_async.h"

namespace memprof::heap {
namespace {

// The number of bits set, in a few instructions: std::popcount is a call to libgcc unless the
// compiler may assume the POPCNT instruction, which Debian's x86-64 baseline does not.
inline unsigned count_bits(uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return static_cast<unsigned>((x * 0x0101010101010101ull) >> 56);
}

// A table of at least `wanted` slots, a power of two: 1.5-3 slots per entry.
size_t capacity_for(size_t entries) { return std::bit_ceil(std::max<size_t>(entries + entries / 2 + 1, 16)); }

// The address table is cut in this many independent parts by the top bits of the hash, so that
// build_table() fills them on as many threads (two cores on the machines we target).
constexpr uint64_t kTableParts = 2;

}  // namespace

AddressIndex AddressIndex::build(std::span<const uint64_t> addresses, uint64_t& duplicates) {
  duplicates = 0;
  AddressIndex index;
  // The runs of one bucket in id order: as many as the buckets when every bucket is regular.
  size_t runs = 0;
  for (size_t id = 0, previous = ~size_t{0}; id < addresses.size(); ++id) {
    const size_t bucket = addresses[id] >> kBucketBits;
    runs += bucket != previous;
    previous = bucket;
  }
  // Runs this short are not Ruby's order (or a heap of the largest slots only): 64 bytes per
  // run would cost more than the table of every address, which then does it alone.
  if (runs > addresses.size() / kFewestPerRun) {
    index.table_ = build_table(addresses, duplicates);
    return index;
  }
  const size_t capacity = capacity_for(runs);
  index.buckets_ = make_big_array_for_overwrite<Bucket>(capacity);
  std::fill_n(index.buckets_.get(), capacity, Bucket{});
  index.bucket_mask_ = capacity - 1;
  index.bucket_shift_ = static_cast<unsigned>(64 - std::countr_zero(capacity));

  bool irregular = false;
  Bucket* run = nullptr;  // the bucket of the previous id
  uint64_t previous = 0;
  for (size_t id = 0; id < addresses.size(); ++id) {
    const uint64_t address = addresses[id];
    const uint64_t key = (address >> kBucketBits) + 1;
    if (run == nullptr || run->key != key) {
      uint64_t slot = home_slot(key, index.bucket_shift_);
      while (index.buckets_[slot].key != 0 && index.buckets_[slot].key != key) slot = (slot + 1) & index.bucket_mask_;
      run = &index.buckets_[slot];
      if (run->key == 0) {
        run->key = key;
        run->first = static_cast<ObjectId>(id);
      } else {
        run->irregular = 1;  // a second run of the bucket
      }
    } else if (address <= previous) {
      run->irregular = 1;  // not in ascending order, or a repeated address
    }
    previous = address;
    if (address % 8 != 0) run->irregular = 1;
    const unsigned position = (address >> 3) % kPositions;
    const uint64_t bit = uint64_t{1} << (position % 64);
    if ((run->bits[position / 64] & bit) == 0) {
      run->bits[position / 64] |= bit;
      for (unsigned later = position / 64 + 1; later < kPositions / 64; ++later) ++run->before[later];
    }
    irregular |= run->irregular != 0;
  }
  if (irregular) index.table_ = build_table(addresses, duplicates);
  return index;
}

void AddressIndex::prefetch(uint64_t address) const {
  if (buckets_) {
    __builtin_prefetch(&buckets_[home_slot((address >> kBucketBits) + 1, bucket_shift_)]);
  } else if (table_.keys) {
    __builtin_prefetch(&table_.keys[home_slot(address >> 3, table_.shift)]);
  }
}

ObjectId AddressIndex::find(uint64_t address) const {
  if (address == 0) return kNoObject;
  if (!buckets_) return table_.keys ? find_in_table(address) : kNoObject;
  const Bucket* bucket = bucket_of(address);
  if (bucket == nullptr) return kNoObject;
  if (bucket->irregular != 0) return find_in_table(address);
  if (address % 8 != 0) return kNoObject;  // would have made its bucket irregular
  const unsigned position = (address >> 3) % kPositions;
  const unsigned word = position / 64;
  const uint64_t bit = uint64_t{1} << (position % 64);
  if ((bucket->bits[word] & bit) == 0) return kNoObject;
  return bucket->first + bucket->before[word] + count_bits(bucket->bits[word] & (bit - 1));
}

AddressIndex::AddressTable AddressIndex::build_table(std::span<const uint64_t> addresses, uint64_t& duplicates) {
  AddressTable table;
  const size_t capacity = capacity_for(addresses.size());
  const uint64_t part_size = capacity / kTableParts;
  // Each part is cleared by the thread that fills it (the first touch of tens of MB is page
  // faults worth sharing); values[] is read only where keys[] matched and needs no clearing.
  table.keys = make_big_array_for_overwrite<uint64_t>(capacity);
  table.values = make_big_array_for_overwrite<ObjectId>(capacity);
  table.part_mask = part_size - 1;
  table.shift = static_cast<unsigned>(64 - std::countr_zero(capacity));

  // Fills one part with the addresses whose home slot is in it, in id order: the first line with
  // an address keeps it. Returns the number of duplicates found.
  auto fill_part = [&table, addresses, part_size](uint64_t part) -> uint64_t {
    const uint64_t first = part * part_size;
    uint64_t* keys = table.keys.get();
    std::fill_n(keys + first, part_size, 0);
    uint64_t repeated = 0;
    constexpr size_t kAhead = 16;  // random writes into a table far larger than the caches
    auto in_part = [&](uint64_t slot) { return (slot & ~table.part_mask) == first; };
    for (size_t id = 0; id < addresses.size(); ++id) {
      if (id + kAhead < addresses.size()) {
        const uint64_t ahead = home_slot(addresses[id + kAhead] >> 3, table.shift);
        if (in_part(ahead)) __builtin_prefetch(&keys[ahead]);  // the other parts are not ours
      }
      const uint64_t target = addresses[id];
      if (target == 0) continue;  // 0 marks empty slots: no object is found at address 0
      const uint64_t home = home_slot(target >> 3, table.shift);
      if (!in_part(home)) continue;
      for (uint64_t slot = home;; slot = first | ((slot + 1) & table.part_mask)) {
        if (keys[slot] == 0) {
          keys[slot] = target;
          table.values[slot] = static_cast<ObjectId>(id);
          break;
        }
        if (keys[slot] == target) {
          ++repeated;
          break;
        }
      }
    }
    return repeated;
  };
  std::vector<Task<uint64_t>> others;
  for (uint64_t part = 1; part < kTableParts; ++part) {
    others.push_back(run_async([=] { return fill_part(part); }));
  }
  duplicates = fill_part(0);
  for (auto& other : others) duplicates += other.get();
  return table;
}

ObjectId AddressIndex::find_in_table(uint64_t address) const {
  const uint64_t home = home_slot(address >> 3, table_.shift);
  const uint64_t part = home & ~table_.part_mask;  // linear probing wraps within the part
  for (uint64_t slot = home;; slot = part | ((slot + 1) & table_.part_mask)) {
    const uint64_t key = table_.keys[slot];
    if (key == address) return table_.values[slot];
    if (key == 0) return kNoObject;
  }
}

}  // namespace memprof::heap
