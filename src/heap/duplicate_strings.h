// Strings with the same value held many times: what interning or freezing them would save.
// Only strings the dump writes in full count (Ruby writes "value" for ASCII strings only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "heap/heap.h"
#include "heap/object_filter.h"

namespace memprof::heap {

struct DuplicateString {
  std::string value;      // the first bytes as the dump writes them (JSON escapes kept)
  bool cut = false;       // `value` is only the start
  uint64_t length = 0;    // bytes of the whole value as written
  uint64_t count = 0;     // String objects holding it
  uint64_t memsize = 0;   // their memsize
  uint64_t wasted = 0;    // memsize of all copies but the largest: what one shared copy saves
  std::vector<ObjectId> samples;  // the largest copies first
};

// Values held by at least two String objects (of `selection`, when given), by wasted bytes
// (then count, then value), at most `top` of them (0: all).
std::vector<DuplicateString> duplicate_strings(const Heap& heap, const ObjectSelection* selection,
                                               size_t top, size_t samples);

}  // namespace memprof::heap
