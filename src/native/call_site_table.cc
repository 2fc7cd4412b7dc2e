#include "native/call_site_table.h"

#include <sys/mman.h>

#include <cstring>
#include <memory>

#include "native/zeroed_memory.h"

namespace memprof::native {
namespace {

constexpr size_t kChunkBytes = CallSiteTable::kRowsPerChunk * sizeof(SiteCounters);
constexpr size_t kKeyChunkBytes = CallSiteTable::kRowsPerChunk * sizeof(SiteKey);

// Publishes a chunk mapped on first use; false when the kernel refuses the memory.
template <typename Row>
bool publish_chunk(std::atomic<Row*>& chunk, size_t bytes, std::atomic<size_t>& total) noexcept {
  if (chunk.load(std::memory_order_acquire) != nullptr) return true;
  auto* fresh = static_cast<Row*>(map_zeroed(bytes));
  if (fresh == nullptr) return false;
  Row* expected = nullptr;
  if (!chunk.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel))
    ::munmap(fresh, bytes);  // another thread made it first
  else
    total.fetch_add(bytes, std::memory_order_relaxed);
  return true;
}

}  // namespace

Result<std::unique_ptr<CallSiteTable>> CallSiteTable::create() {
  std::unique_ptr<CallSiteTable> table(new CallSiteTable);
  if (!table->index_.map(kSlots)) return err("native: cannot map the call-site index ({} slots)", kSlots);
  if (!table->map_chunk(kInternalSite))
    return err("native: cannot map the call-site counters ({} bytes)", kChunkBytes + kKeyChunkBytes);
  return table;
}

CallSiteTable::~CallSiteTable() {
  for (auto& chunk : chunks_)
    if (SiteCounters* rows = chunk.load(std::memory_order_relaxed)) ::munmap(rows, kChunkBytes);
  for (auto& chunk : key_chunks_)
    if (SiteKey* keys = chunk.load(std::memory_order_relaxed)) ::munmap(keys, kKeyChunkBytes);
}

bool CallSiteTable::map_chunk(uint32_t id) noexcept {
  size_t chunk = id / kRowsPerChunk;
  return publish_chunk(key_chunks_[chunk], kKeyChunkBytes, chunk_bytes_) &&
         publish_chunk(chunks_[chunk], kChunkBytes, chunk_bytes_);
}

uint32_t CallSiteTable::new_id(const SiteKey& key) noexcept {
  uint32_t id = next_id_.fetch_add(1, std::memory_order_acq_rel);
  if (id >= kCapacity) {
    next_id_.store(kCapacity, std::memory_order_relaxed);
    return kOverflowSite;
  }
  if (!map_chunk(id)) return kOverflowSite;
  SiteKey& stored = key_chunks_[id / kRowsPerChunk].load(std::memory_order_acquire)[id % kRowsPerChunk];
  stored.depth = key.depth;
  stored.ruby_file = key.ruby_file;
  stored.ruby_line = key.ruby_line;
  std::memcpy(stored.frames, key.frames, key.depth * sizeof(key.frames[0]));
  // The ready mark (ready_row) comes after the key.
  row(id).return_address.store(key.frames[0], std::memory_order_release);
  return id;
}

uint32_t CallSiteTable::intern(const SiteKey& key) noexcept {
  return index_.intern(
      key.hash(), [&](uint32_t id) { return this->key(id).same_as(key); }, [&] { return new_id(key); },
      next_id_.load(std::memory_order_relaxed) >= kCapacity, kOverflowSite);
}

uint32_t CallSiteTable::id_limit() const noexcept {
  uint32_t next = next_id_.load(std::memory_order_acquire);
  return next < kCapacity ? next : kCapacity;
}

SiteCounters* CallSiteTable::ready_row(uint32_t id) const noexcept {
  SiteCounters* rows = chunks_[id / kRowsPerChunk].load(std::memory_order_acquire);
  if (rows == nullptr || key_chunks_[id / kRowsPerChunk].load(std::memory_order_acquire) == nullptr) return nullptr;
  SiteCounters* row = &rows[id % kRowsPerChunk];
  if (id > kOverflowSite && row->return_address.load(std::memory_order_acquire) == 0) return nullptr;
  return row;
}

size_t CallSiteTable::mapped_bytes() const noexcept {
  return index_.mapped_bytes() + chunk_bytes_.load(std::memory_order_relaxed);
}

}  // namespace memprof::native
