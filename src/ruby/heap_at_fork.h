// The parts of the heap that a forked child changes before it can write a dump, as the parent
// had them (forked_child.h).
//
// The child must forget Ruby's other threads before its first blocking call (rb_thread_atfork).
// That frees their stacks and drops them from the Ractor's thread list, so a dump written after
// it would show the threads without the objects their frames hold (a background thread's local
// Array, a request in flight: garbage, with no path from a root) and a thread no variable holds
// as garbage itself. So the child first reads, as ObjectSpace.dump_all reads them, the roots
// (rb_objspace_reachable_objects_from_root) and the references of the Ractor and of each thread
// (rb_objspace_reachable_objects_from: a thread's frames and machine stack, still mapped in the
// child); then forgets the threads and turns GC off, so that nothing they held is freed before
// the dump reads it. The annotation writes these in place of what the dump says (readout.h).
#pragma once

#include <optional>
#include <vector>

#include "core/track/dump_annotate.h"
#include "ruby/ruby_headers.h"

namespace memprof::ruby {

// In the child, before rb_thread_atfork: records the roots and the references of `objects` (the
// Ractor and its other threads).
void capture_heap_at_fork(const std::vector<VALUE>& objects) noexcept;

// What was recorded, or nullopt outside such a child.
const std::optional<track::ParentView>& heap_at_fork();

}  // namespace memprof::ruby
