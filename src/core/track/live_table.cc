#include "core/track/live_table.h"

#include <cstdlib>

namespace memprof::track {

LiveTable::~LiveTable() { clear(); }

LiveTable::Chunk* LiveTable::chunk_for(uintptr_t key) noexcept {
  Chunk* chunk = nullptr;
  if (auto it = chunks_.find(key); it != chunks_.end()) {
    chunk = it->second;
  } else {
    chunk = static_cast<Chunk*>(calloc(1, sizeof(Chunk)));
    if (chunk == nullptr) return nullptr;
    // Position 0 is the slot straddling (or starting at) the window's first byte.
    chunk->first_slot = (key << kChunkShift) / kSlotGranularity;
    try {
      chunks_.emplace(key, chunk);
    } catch (...) {
      free(chunk);
      return nullptr;
    }
  }
  recent_[recent_index(key)] = {key, chunk};
  return chunk;
}

void LiveTable::free_chunk(uintptr_t key) noexcept {
  auto it = chunks_.find(key);
  if (it == chunks_.end()) return;
  size_ -= it->second->live;
  free(it->second);
  chunks_.erase(it);
  if (RecentChunk& recent = recent_[recent_index(key)]; recent.key == key) recent = {};
}

std::optional<LiveEntry> LiveTable::find(uintptr_t address) const noexcept {
  if (address % kSlotGranularity != 0) return std::nullopt;
  auto it = chunks_.find(address >> kChunkShift);
  if (it == chunks_.end()) return std::nullopt;
  const Chunk* chunk = it->second;
  size_t i = address / kSlotGranularity - chunk->first_slot;
  if (chunk->types()[i] == 0) return std::nullopt;
  return entry_at(*chunk, i);
}

void LiveTable::clear_window_marks() noexcept {
  for (auto& [key, chunk] : chunks_)
    for (uint8_t& type : chunk->types_) type &= static_cast<uint8_t>(~kInWindow);
}

std::optional<LiveEntry> LiveTable::erase(uintptr_t address) noexcept {
  if (address % kSlotGranularity != 0) return std::nullopt;
  auto it = chunks_.find(address >> kChunkShift);
  if (it == chunks_.end()) return std::nullopt;
  Chunk* chunk = it->second;
  size_t i = address / kSlotGranularity - chunk->first_slot;
  if (chunk->types()[i] == 0) return std::nullopt;
  LiveEntry erased = entry_at(*chunk, i);
  chunk->types()[i] = 0;
  --chunk->live;
  --size_;
  return erased;
}

void LiveTable::clear() noexcept {
  for (auto& [key, chunk] : chunks_) free(chunk);
  chunks_.clear();
  recent_.fill({});
  size_ = 0;
  after_prune();
}

size_t LiveTable::memory_bytes() const {
  // Chunks, plus the map's nodes and buckets (libstdc++: one node of key, value and next
  // pointer per chunk, one pointer per bucket).
  return chunks_.size() * (sizeof(Chunk) + 3 * sizeof(void*)) +
         chunks_.bucket_count() * sizeof(void*);
}

void LiveTable::after_prune() noexcept {
  prune_threshold_ = size_ * 2 > kMinPruneThreshold ? size_ * 2 : kMinPruneThreshold;
}

}  // namespace memprof::track
