// Ruby file names seen by the allocator hooks -> small ids, for the Ruby-line part of a site
// key. rb_sourcefile() hands out a pointer into a Ruby String that may move or be freed later
// (code reloaded, GC.compact), so the name is copied here at first sight: the report never
// reads the program's memory after the fact.
//
// Lock-free: an InternIndex of name hashes, an entry array and a byte arena, each one mapping
// made at the start (untouched pages cost nothing). Each thread remembers the last name it
// interned (a pointer compare and one memcmp instead of a hash for the common case of many
// allocations from one file).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "core/util/result.h"
#include "core/util/scoped_fd.h"
#include "native/intern_index.h"
#include "native/site_key.h"

namespace memprof::native {

inline constexpr uint32_t kOtherRubyFiles = 1;  // names beyond the table's capacity, together

class RubyFileTable {
 public:
  static constexpr uint32_t kCapacity = 1 << 15;
  static constexpr size_t kArenaBytes = size_t{16} << 20;
  static constexpr size_t kMaxNameBytes = 4096;  // longer names are cut (at the front)

  static Result<std::unique_ptr<RubyFileTable>> create();

  // The id of `path` (a NUL-terminated name), copied on first sight.
  uint32_t intern(const char* path, LastRubyFile& last) noexcept;
  // Ids below this may be in use; name() is empty for one not ready yet.
  uint32_t id_limit() const noexcept;
  std::string_view name(uint32_t id) const noexcept;
  size_t mapped_bytes() const noexcept;

 private:
  struct Entry {
    uint32_t offset;
    std::atomic<uint32_t> length_plus_one;  // 0 until the bytes are copied
  };
  RubyFileTable() = default;
  uint32_t add(std::string_view name) noexcept;
  bool holds(uint32_t id, std::string_view name) const noexcept;

  InternIndex index_;
  ScopedMmap entry_mapping_;
  ScopedMmap arena_mapping_;
  Entry* entries_ = nullptr;
  char* arena_ = nullptr;
  std::atomic<uint32_t> next_id_{kOtherRubyFiles + 1};
  std::atomic<size_t> arena_used_{0};
};

}  // namespace memprof::native
