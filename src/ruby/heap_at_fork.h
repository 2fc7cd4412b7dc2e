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

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/track/dump_annotate.h"
#include "ruby/ruby_headers.h"

namespace memprof::ruby {

// In the child, before rb_thread_atfork: records the roots and the references of `objects` (the
// Ractor and its other threads).
//
// `app_frames_end`, when not null, is an address in the frame of the memprof function the app's
// code called, or that interrupted it (the attach agent's job), on this thread: the frames
// below it are memprof's. Ruby reads this thread's whole machine stack for the machine_context
// root, and memprof's frames have slots they never write, which hold what deeper calls of the
// app left there earlier (seen: the agent's job frames kept the 1,000-String Array of a loop's
// previous round, garbage in the app, "kept alive only through machine_context" in every dump).
// Such a root is left out unless a word of the stack above `app_frames_end` holds it too. That
// function must save every callee-saved register in its frame (__builtin_unwind_init), so that
// what the app held in registers is on that part of the stack.
void capture_heap_at_fork(const std::vector<VALUE>& objects, const void* app_frames_end) noexcept;

// What was recorded, or nullopt outside such a child.
const std::optional<track::ParentView>& heap_at_fork();

// A reference from a root, as rb_objspace_reachable_objects_from_root reports it.
struct Root {
  const char* category;  // "vm", "machine_context", ...: Ruby's, alive for the process
  VALUE object;
};

// Drops the machine_context references that none of `words` (the app's part of the stack)
// holds; keeps every other.
void drop_machine_context_roots_not_in(std::vector<Root>& roots, std::span<const uintptr_t> words);

}  // namespace memprof::ruby
