// The Ruby file and line a native call comes from, read on the calling thread with Ruby's own
// rb_sourcefile/rb_sourceline (the innermost Ruby-level frame of that thread; for a C
// extension's method, the line that called it): `memprof trace --ruby-caller` and the Ruby
// lines of `memprof native`.
//
// Read only where Ruby's frames cannot change under the reader and never allocating:
// - once the VM is booted (rb_cObject set) and until it ends (ruby_vm_end_watch.h: the caller
//   must hold a RubyVmEndWatch while it reads);
// - on a thread holding the GVL (ruby_thread_has_gvl_p: a Ruby thread, not in a blocking
//   region; a thread without it could race with GC moving the frame's iseq);
// - not during GC (rb_during_gc): GC.compact moves iseqs and strings before it fixes the
//   frames that point at them. Allocations made by GC itself are charged to "(garbage
//   collection)" instead.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memprof::agent {

// Finds the functions in the process; false when a Ruby lacks them.
bool find_ruby_caller_api();

// A native::RubyLocationSource: the calling thread's file (valid until it runs Ruby again) and
// line, "(garbage collection)" during a GC, "(without the GVL)" on a Ruby thread in a blocking
// region (line 0); false on threads Ruby did not make and before Ruby has a frame.
bool ruby_location(const char** path, uint32_t* line) noexcept;

// A tracer::CallerSource: the same, copied into `file` (cut at the front when longer).
uint32_t ruby_caller(char* file, size_t capacity);

// The same for a thread that holds the GVL whatever ruby_thread_has_gvl_p says: one letting go
// of it, in Ruby's SUSPENDED thread event (blocking_region_lines.h), has already marked itself
// as in a blocking region.
uint32_t ruby_caller_holding_gvl(char* file, size_t capacity);

}  // namespace memprof::agent
