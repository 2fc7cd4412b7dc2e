// One of Ruby's internal events (RUBY_INTERNAL_EVENT_NEWOBJ, _FREEOBJ, _GC_END_MARK, ...)
// delivered to a plain function. The tracepoint object is created once, up front, so that
// enabling and disabling later allocates nothing.
//
// The callback runs inside the allocator, the marker or the sweeper: it must not allocate Ruby
// objects, raise, or call into Ruby. Enabling NEWOBJ or FREEOBJ makes Ruby leave its fast
// allocation or sweep path for as long as it is enabled (1.45x each on an allocation loop),
// which is why memprof uses them only as the fallback, the test oracle, and around
// compaction; the GC phase events cost nothing outside a GC.
//
// Ruby keeps event hooks per Ractor (3.0+): an enabled hook fires only for what the Ractor
// that enabled it does.
#pragma once

#include "ruby/ruby_headers.h"

namespace memprof::ruby {

class InternalEventHook {
 public:
  // `object`: the allocated or freed object for NEWOBJ/FREEOBJ, Qnil for the GC events.
  using Callback = void (*)(VALUE object, void* data);
  InternalEventHook(rb_event_flag_t event, Callback callback, void* data);
  ~InternalEventHook();
  InternalEventHook(const InternalEventHook&) = delete;
  InternalEventHook& operator=(const InternalEventHook&) = delete;

  void enable();
  void disable();
  bool enabled() const { return enabled_; }

 private:
  static void dispatch(VALUE tracepoint, void* self);

  VALUE tracepoint_ = Qnil;  // registered with the GC, so it is marked (and pinned)
  rb_event_flag_t event_;
  Callback callback_;
  void* data_;
  bool enabled_ = false;
};

}  // namespace memprof::ruby
