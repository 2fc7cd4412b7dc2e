// A function Ruby runs soon on a Ruby thread that holds its lock, outside GC: at the next
// interrupt check after trigger(). The way for code that runs where Ruby cannot be called (an
// allocation hook, a signal handler, the attach agent's own thread) to get work done that needs
// the GVL or may allocate.
//
//   Ruby 3.3+:  rb_postponed_job_preregister once, then rb_postponed_job_trigger, which is
//               async-signal-safe and may be called from any thread. Triggers coalesce.
//   before:     rb_postponed_job_register_one (deprecated in 3.3), with non-NULL data: up to
//               3.2 a NULL-data job can be clobbered while the queue is flushed (Bug #19991).
#pragma once

#include "ruby/ruby_headers.h"

namespace memprof::ruby {

class PostponedJob {
 public:
  using Function = void (*)(void* data);
  // On a Ruby thread holding the GVL. `data` must not be null.
  PostponedJob(Function function, void* data);
  PostponedJob(const PostponedJob&) = delete;
  PostponedJob& operator=(const PostponedJob&) = delete;

  // Asks Ruby to run the job; false when it cannot be queued now (before 3.3: the queue is
  // full). Never blocks, never allocates.
  bool trigger() noexcept;

 private:
  Function function_;
  void* data_;
#if RUBY_API_VERSION_CODE >= 30300
  rb_postponed_job_handle_t handle_ = POSTPONED_JOB_HANDLE_INVALID;
#endif
};

}  // namespace memprof::ruby
