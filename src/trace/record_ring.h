// One traced thread's call records on their way to the agent's reader: a single-producer,
// single-consumer ring of fixed-size records. The producer is the traced thread inside a hook,
// so push() never blocks, never allocates and never calls into libc: when the reader is behind
// and the ring is full, the record is dropped and counted (the trace says how many). The reader
// drains every thread's ring in turn.
//
// Ordering: the producer writes the record, then publishes it by a release store of its tail;
// the reader acquires the tail, copies the records, then frees their slots by a release store
// of its head, which the producer acquires before reusing them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace memprof::trace {

template <typename Record, size_t kCapacity>
class RecordRing {
  static_assert(kCapacity > 0 && (kCapacity & (kCapacity - 1)) == 0, "a power of two");
  static_assert(std::is_trivially_copyable_v<Record>, "records are copied as bytes");

 public:
  // Producer side. False when the ring is full (the record is counted as dropped).
  bool push(const Record& record) noexcept {
    uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - head_.load(std::memory_order_acquire) == kCapacity) {
      dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return false;
    }
    slots_[tail & (kCapacity - 1)].record = record;
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

  // Consumer side: calls visit(record) for every published record (at most `limit`), oldest
  // first, and returns how many it visited.
  template <typename Visit>
  size_t drain(Visit&& visit, size_t limit = SIZE_MAX) {
    uint64_t head = head_.load(std::memory_order_relaxed);
    uint64_t tail = tail_.load(std::memory_order_acquire);
    if (tail - head > limit) tail = head + limit;
    for (uint64_t i = head; i != tail; ++i) visit(static_cast<const Record&>(slots_[i & (kCapacity - 1)].record));
    head_.store(tail, std::memory_order_release);
    return static_cast<size_t>(tail - head);
  }

  // Records dropped so far (read by the consumer; exact once the producer has stopped).
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  static constexpr size_t capacity() { return kCapacity; }

 private:
  // Producer and consumer indexes on separate cache lines: each is written by one side only.
  alignas(64) std::atomic<uint64_t> tail_{0};
  std::atomic<uint64_t> dropped_{0};
  alignas(64) std::atomic<uint64_t> head_{0};
  // Left unconstructed: a ring in fresh mmap'ed memory touches its pages only as records
  // arrive (a thread's first traced call would otherwise write all of them).
  union Slot {
    Slot() noexcept {}
    Record record;
  };
  alignas(64) Slot slots_[kCapacity];
};

}  // namespace memprof::trace
