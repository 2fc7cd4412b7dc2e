// `memprof trace --ruby-caller`: the Ruby file and line that made each traced call, read at
// the call on the calling thread with Ruby's own rb_sourcefile/rb_sourceline (the innermost
// Ruby-level frame of that thread; for a C extension's method, the line that called it).
// Only on threads Ruby knows (ruby_native_thread_p), never allocating: those functions read
// the thread's frames, which cannot change under it while it runs the traced call.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memprof::agent {

// Finds the three functions in the process; false when a Ruby lacks them.
bool find_ruby_caller_api();
// A tracer::CallerSource (call find_ruby_caller_api first).
uint32_t ruby_caller(char* file, size_t capacity);

}  // namespace memprof::agent
