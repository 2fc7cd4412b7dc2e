// Liveness of table entries, read from the heap itself (see tracker.h for why this is exact).
#pragma once

#include "core/track/heap_ranges.h"
#include "core/track/live_table.h"
#include "ruby/ruby_headers.h"

namespace memprof::ruby {

// The slot ranges of every live heap page, from rb_objspace_each_objects (which first finishes
// any lazy sweep). Allocates no Ruby object; must not run inside GC.
track::HeapRanges collect_heap_ranges();

// True when the entry's slot is on a live page and still holds an object of the recorded type.
// Free slots read as T_NONE, finalizer-pending ones as T_ZOMBIE and moved-out ones as T_MOVED,
// none of which is a tracked type.
inline bool entry_is_live(const track::LiveEntry& entry, const track::HeapRanges& ranges) {
  return ranges.contains_slot(entry.address) && slot_type(entry.address) == entry.type;
}

}  // namespace memprof::ruby
