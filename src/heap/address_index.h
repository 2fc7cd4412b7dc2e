// Object address -> id, for resolving a dump's references once every object line is read.
//
// Ruby writes a heap page's objects in address order, page after page, so the objects of one
// 2 KB range of addresses (a "bucket") are a run of consecutive ids in ascending address order
// (in every dump measured: Rails, the synthetic and the shape dumps, Ruby 3.1 to 3.4). Such a
// bucket needs no table of addresses: a bitmap of its 256 8-byte positions, and an object's id
// is the run's first id plus the number of objects before it in the bucket. The buckets sit in
// a hash table of one cache line each, small enough for the CPU's caches (1 MB for the 195,000
// objects of a production Rails heap, where a table of every address took 6 MB). A bucket whose
// objects are not such a run (a hand-made or concatenated dump, a repeated or unaligned address)
// is looked up in an open-addressing table of every address, built only when there is one; when
// runs are short (fewer than 8 objects on average: another order than Ruby's), the table alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/util/huge_page_allocator.h"
#include "heap/object_id.h"

namespace memprof::heap {

class AddressIndex {
 public:
  // Indexes addresses[id] as `id`; `duplicates` receives the number of addresses that repeat an
  // earlier one (the first object keeps the address).
  static AddressIndex build(std::span<const uint64_t> addresses, uint64_t& duplicates);

  // The id of the object at `address`; kNoObject when no object has it (or the index is empty).
  ObjectId find(uint64_t address) const;
  // Starts loading what find(address) reads: bulk lookups call it a few lookups ahead.
  void prefetch(uint64_t address) const;

 private:
  static constexpr unsigned kBucketBits = 11;                       // 2 KB of addresses
  static constexpr unsigned kPositions = (1u << kBucketBits) / 8;  // 8-byte aligned objects
  static constexpr size_t kFewestPerRun = 8;  // objects per run, on average, for the buckets
  struct alignas(64) Bucket {
    uint64_t key;  // bucket number + 1; 0: an empty slot
    ObjectId first;
    uint32_t irregular;  // its objects are looked up in the address table
    uint64_t bits[kPositions / 64];
    uint8_t before[kPositions / 64];  // objects in the words of `bits` before each
  };
  // The address table, for irregular buckets: slots cut in two parts by the top bit of the
  // hash, filled on two threads.
  struct AddressTable {
    BigArray<uint64_t> keys;  // 0 = empty slot
    BigArray<ObjectId> values;
    uint64_t part_mask = 0;  // slots per part - 1; probing wraps within a part
    unsigned shift = 64;
  };

  const Bucket* bucket_of(uint64_t address) const {
    const uint64_t key = (address >> kBucketBits) + 1;
    for (uint64_t slot = home_slot(key, bucket_shift_);; slot = (slot + 1) & bucket_mask_) {
      const Bucket& bucket = buckets_[slot];
      if (bucket.key == key) return &bucket;
      if (bucket.key == 0) return nullptr;
    }
  }
  // Fibonacci hashing: the best-mixed top bits of the product.
  static uint64_t home_slot(uint64_t key, unsigned shift) { return (key * 0x9E3779B97F4A7C15ull) >> shift; }
  static AddressTable build_table(std::span<const uint64_t> addresses, uint64_t& duplicates);
  ObjectId find_in_table(uint64_t address) const;

  BigArray<Bucket> buckets_;
  uint64_t bucket_mask_ = 0;
  unsigned bucket_shift_ = 64;
  AddressTable table_;
};

}  // namespace memprof::heap
