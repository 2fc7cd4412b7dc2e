#include "ruby/internal_events.h"

namespace memprof::ruby {

InternalEventHook::InternalEventHook(rb_event_flag_t event, Callback callback, void* data)
    : event_(event), callback_(callback), data_(data) {
  rb_gc_register_address(&tracepoint_);
  tracepoint_ = rb_tracepoint_new(0, event, &InternalEventHook::dispatch, this);
}

InternalEventHook::~InternalEventHook() {
  disable();
  rb_gc_unregister_address(&tracepoint_);
}

void InternalEventHook::enable() {
  if (enabled_) return;
  rb_tracepoint_enable(tracepoint_);
  enabled_ = true;
}

void InternalEventHook::disable() {
  if (!enabled_) return;
  rb_tracepoint_disable(tracepoint_);
  enabled_ = false;
}

void InternalEventHook::dispatch(VALUE tracepoint, void* self) {
  auto* hook = static_cast<InternalEventHook*>(self);
  constexpr rb_event_flag_t kObjectEvents = RUBY_INTERNAL_EVENT_NEWOBJ | RUBY_INTERNAL_EVENT_FREEOBJ;
  // rb_tracearg_object raises for events that carry no object.
  VALUE object = (hook->event_ & kObjectEvents) != 0
                     ? rb_tracearg_object(rb_tracearg_from_tracepoint(tracepoint))
                     : Qnil;
  hook->callback_(object, hook->data_);
}

}  // namespace memprof::ruby
