#include "native/call_site_table.h"

#include <sched.h>
#include <sys/mman.h>

#include <cerrno>
#include <memory>

namespace memprof::native {
namespace {

constexpr size_t kChunkBytes = CallSiteTable::kRowsPerChunk * sizeof(SiteCounters);
// A slot whose winner has not published the id yet: wait this many turns, then give up on it
// (the winner was stopped, e.g. the copy of another thread in a forked child).
constexpr unsigned kPublishWaits = 10000;

void* map_zeroed(size_t bytes) {
  int saved_errno = errno;
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  errno = saved_errno;
  return memory == MAP_FAILED ? nullptr : memory;
}

size_t slot_of(uintptr_t address) {
  return static_cast<size_t>((address * 0x9E3779B97F4A7C15ull) >> 48) & (CallSiteTable::kSlots - 1);
}

}  // namespace

Result<std::unique_ptr<CallSiteTable>> CallSiteTable::create() {
  std::unique_ptr<CallSiteTable> table(new CallSiteTable);
  size_t bytes = kSlots * sizeof(Slot);
  void* slots = map_zeroed(bytes);
  if (slots == nullptr) return err("native: cannot map the call-site table ({} bytes)", bytes);
  table->slot_mapping_ = ScopedMmap(slots, bytes);
  table->slots_ = static_cast<Slot*>(slots);
  if (table->chunk_for(kInternalSite) == nullptr)
    return err("native: cannot map the call-site counters ({} bytes)", kChunkBytes);
  return table;
}

CallSiteTable::~CallSiteTable() {
  for (auto& chunk : chunks_)
    if (SiteCounters* rows = chunk.load(std::memory_order_relaxed)) ::munmap(rows, kChunkBytes);
}

SiteCounters* CallSiteTable::chunk_for(uint32_t id) noexcept {
  auto& chunk = chunks_[id / kRowsPerChunk];
  SiteCounters* rows = chunk.load(std::memory_order_acquire);
  if (rows != nullptr) return rows;
  auto* fresh = static_cast<SiteCounters*>(map_zeroed(kChunkBytes));
  if (fresh == nullptr) return nullptr;
  if (!chunk.compare_exchange_strong(rows, fresh, std::memory_order_acq_rel)) {
    ::munmap(fresh, kChunkBytes);  // another thread made it first
    return rows;
  }
  chunk_bytes_.fetch_add(kChunkBytes, std::memory_order_relaxed);
  return fresh;
}

uint32_t CallSiteTable::new_id(uintptr_t return_address) noexcept {
  uint32_t id = next_id_.fetch_add(1, std::memory_order_acq_rel);
  if (id >= kCapacity) {
    next_id_.store(kCapacity, std::memory_order_relaxed);
    return kOverflowSite;
  }
  SiteCounters* rows = chunk_for(id);
  if (rows == nullptr) return kOverflowSite;
  rows[id % kRowsPerChunk].return_address.store(return_address, std::memory_order_release);
  return id;
}

uint32_t CallSiteTable::intern(uintptr_t return_address) noexcept {
  for (size_t i = slot_of(return_address), probes = 0; probes < kSlots; i = (i + 1) & (kSlots - 1), ++probes) {
    Slot& slot = slots_[i];
    uintptr_t key = slot.address.load(std::memory_order_acquire);
    if (key == 0) {
      if (slot.address.compare_exchange_strong(key, return_address, std::memory_order_acq_rel)) {
        uint32_t id = new_id(return_address);
        slot.id.store(id, std::memory_order_release);
        return id;
      }
      // Lost the slot: `key` now holds the winner's address.
    }
    if (key != return_address) continue;
    for (unsigned waits = 0; waits < kPublishWaits; ++waits) {
      uint32_t id = slot.id.load(std::memory_order_acquire);
      if (id != 0) return id;
      ::sched_yield();
    }
    return kOverflowSite;
  }
  return kOverflowSite;
}

uint32_t CallSiteTable::id_limit() const noexcept {
  uint32_t next = next_id_.load(std::memory_order_acquire);
  return next < kCapacity ? next : kCapacity;
}

SiteCounters* CallSiteTable::ready_row(uint32_t id) const noexcept {
  SiteCounters* rows = chunks_[id / kRowsPerChunk].load(std::memory_order_acquire);
  if (rows == nullptr) return nullptr;
  SiteCounters* row = &rows[id % kRowsPerChunk];
  if (id > kOverflowSite && row->return_address.load(std::memory_order_acquire) == 0) return nullptr;
  return row;
}

size_t CallSiteTable::mapped_bytes() const noexcept {
  return slot_mapping_.size() + chunk_bytes_.load(std::memory_order_relaxed);
}

}  // namespace memprof::native
