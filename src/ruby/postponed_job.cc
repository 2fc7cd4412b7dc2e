#include "ruby/postponed_job.h"

namespace memprof::ruby {

PostponedJob::PostponedJob(Function function, void* data) : function_(function), data_(data) {
#if RUBY_API_VERSION_CODE >= 30300
  handle_ = rb_postponed_job_preregister(0, function_, data_);
#endif
}

bool PostponedJob::trigger() noexcept {
#if RUBY_API_VERSION_CODE >= 30300
  if (handle_ == POSTPONED_JOB_HANDLE_INVALID) return false;
  rb_postponed_job_trigger(handle_);
  return true;
#else
  return rb_postponed_job_register_one(0, function_, data_) != 0;
#endif
}

}  // namespace memprof::ruby
