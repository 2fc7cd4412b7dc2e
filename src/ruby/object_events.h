// One of Ruby's internal object events (RUBY_INTERNAL_EVENT_NEWOBJ or _FREEOBJ) delivered to a
// plain function. The tracepoint object is created once, up front, so that enabling and
// disabling later allocates nothing.
//
// The callback runs inside the allocator or the sweeper: it must not allocate Ruby objects,
// raise, or call into Ruby. Enabling any such event makes Ruby leave its fast allocation or
// sweep path for as long as it is enabled (1.45x each on an allocation loop), which is why
// memprof uses them only as the fallback, the test oracle, and around compaction.
#pragma once

#include "ruby/ruby_headers.h"

namespace memprof::ruby {

class ObjectEventHook {
 public:
  using Callback = void (*)(VALUE object, void* data);
  ObjectEventHook(rb_event_flag_t event, Callback callback, void* data);
  ~ObjectEventHook();
  ObjectEventHook(const ObjectEventHook&) = delete;
  ObjectEventHook& operator=(const ObjectEventHook&) = delete;

  void enable();
  void disable();
  bool enabled() const { return enabled_; }

 private:
  static void dispatch(VALUE tracepoint, void* self);

  VALUE tracepoint_ = Qnil;  // registered with the GC, so it is marked (and pinned)
  Callback callback_;
  void* data_;
  bool enabled_ = false;
};

}  // namespace memprof::ruby
