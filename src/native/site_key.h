// What makes two allocations the "same site": the stack of return addresses above the
// allocator (its caller first, up to the session's depth) and, in a Ruby process, the Ruby
// file and line running on the allocating thread. Built inside the hook, on its stack.
#pragma once

#include <cstdint>
#include <cstring>

#include "native/intern_index.h"

namespace memprof::native {

inline constexpr uint32_t kMaxStackDepth = 32;
inline constexpr uint32_t kNoRubyFile = 0;

// The Ruby file and line running on the calling thread, when it has one (agent/ruby_caller.h):
// `path` is only valid until the thread runs Ruby again. Never allocates.
using RubyLocationSource = bool (*)(const char** path, uint32_t* line) noexcept;

// How much of an allocation's context makes its site.
struct Attribution {
  uint32_t stack_depth = 1;  // 1: the caller alone; up to kMaxStackDepth (stack_unwinder.h)
  RubyLocationSource ruby_location = nullptr;  // null: no Ruby lines
};

// The calling thread's last interned Ruby file name (ruby_file_table.h; in its hook state).
struct LastRubyFile {
  const char* path = nullptr;
  uint32_t id = kNoRubyFile;
};

struct SiteKey {
  uint32_t depth = 0;      // frames used: at least 1 for a real site, 0 for the fixed ones
  uint32_t ruby_file = 0;  // RubyFileTable id; 0: no Ruby line (not a Ruby thread, no Ruby)
  uint32_t ruby_line = 0;
  uintptr_t frames[kMaxStackDepth];  // only [0, depth) is set

  uint64_t hash() const noexcept {
    uint64_t hash = mix_hash(depth, (uint64_t{ruby_file} << 32) | ruby_line);
    for (uint32_t i = 0; i < depth; ++i) hash = mix_hash(hash, frames[i]);
    return hash;
  }
  bool same_as(const SiteKey& other) const noexcept {
    return depth == other.depth && ruby_file == other.ruby_file && ruby_line == other.ruby_line &&
           std::memcmp(frames, other.frames, depth * sizeof(frames[0])) == 0;
  }
};

}  // namespace memprof::native
