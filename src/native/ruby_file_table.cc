#include "native/ruby_file_table.h"

#include <cstring>

#include "native/zeroed_memory.h"

namespace memprof::native {
namespace {

std::string_view bounded_name(const char* path) noexcept {
  size_t length = ::strnlen(path, RubyFileTable::kMaxNameBytes + 1);
  if (length <= RubyFileTable::kMaxNameBytes) return {path, length};
  // The end names the file ("...app/models/user.rb"); find it without reading past the NUL.
  length += std::strlen(path + length);
  return {path + length - RubyFileTable::kMaxNameBytes, RubyFileTable::kMaxNameBytes};
}

uint64_t hash_of(std::string_view name) noexcept {
  uint64_t hash = name.size();
  size_t i = 0;
  for (; i + 8 <= name.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, name.data() + i, 8);
    hash = mix_hash(hash, word);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, name.data() + i, name.size() - i);
  return mix_hash(hash, tail);
}

}  // namespace

Result<std::unique_ptr<RubyFileTable>> RubyFileTable::create() {
  std::unique_ptr<RubyFileTable> table(new RubyFileTable);
  size_t entry_bytes = kCapacity * sizeof(Entry);
  void* entries = map_zeroed(entry_bytes);
  void* arena = map_zeroed(kArenaBytes);
  if (entries != nullptr) table->entry_mapping_ = ScopedMmap(entries, entry_bytes);
  if (arena != nullptr) table->arena_mapping_ = ScopedMmap(arena, kArenaBytes);
  if (entries == nullptr || arena == nullptr || !table->index_.map(kCapacity * 2))
    return err("native: cannot map the Ruby file table");
  table->entries_ = static_cast<Entry*>(entries);
  table->arena_ = static_cast<char*>(arena);
  return table;
}

bool RubyFileTable::holds(uint32_t id, std::string_view name) const noexcept {
  const Entry& entry = entries_[id];
  return entry.length_plus_one.load(std::memory_order_acquire) == name.size() + 1 &&
         std::memcmp(arena_ + entry.offset, name.data(), name.size()) == 0;
}

uint32_t RubyFileTable::add(std::string_view name) noexcept {
  uint32_t id = next_id_.fetch_add(1, std::memory_order_acq_rel);
  size_t offset = arena_used_.fetch_add(name.size(), std::memory_order_acq_rel);
  if (id >= kCapacity || offset + name.size() > kArenaBytes) {
    next_id_.store(kCapacity, std::memory_order_relaxed);
    return kOtherRubyFiles;
  }
  Entry& entry = entries_[id];
  std::memcpy(arena_ + offset, name.data(), name.size());
  entry.offset = static_cast<uint32_t>(offset);
  entry.length_plus_one.store(static_cast<uint32_t>(name.size() + 1), std::memory_order_release);
  return id;
}

uint32_t RubyFileTable::intern(const char* path, LastRubyFile& last) noexcept {
  std::string_view name = bounded_name(path);
  if (path == last.path && last.id > kOtherRubyFiles && holds(last.id, name)) return last.id;
  uint32_t id = index_.intern(
      hash_of(name), [&](uint32_t candidate) { return holds(candidate, name); }, [&] { return add(name); },
      next_id_.load(std::memory_order_relaxed) >= kCapacity, kOtherRubyFiles);
  last = {path, id};
  return id;
}

uint32_t RubyFileTable::id_limit() const noexcept {
  uint32_t next = next_id_.load(std::memory_order_acquire);
  return next < kCapacity ? next : kCapacity;
}

std::string_view RubyFileTable::name(uint32_t id) const noexcept {
  if (id <= kOtherRubyFiles || id >= kCapacity) return {};
  const Entry& entry = entries_[id];
  uint32_t length_plus_one = entry.length_plus_one.load(std::memory_order_acquire);
  if (length_plus_one == 0) return {};
  return {arena_ + entry.offset, length_plus_one - 1};
}

size_t RubyFileTable::mapped_bytes() const noexcept {
  // Pages of the entry array and the arena are only backed once written.
  return index_.mapped_bytes() + next_id_.load(std::memory_order_relaxed) * sizeof(Entry) +
         arena_used_.load(std::memory_order_relaxed);
}

}  // namespace memprof::native
