#include "ruby/object_events.h"

namespace memprof::ruby {

ObjectEventHook::ObjectEventHook(rb_event_flag_t event, Callback callback, void* data)
    : callback_(callback), data_(data) {
  rb_gc_register_address(&tracepoint_);
  tracepoint_ = rb_tracepoint_new(0, event, &ObjectEventHook::dispatch, this);
}

ObjectEventHook::~ObjectEventHook() {
  disable();
  rb_gc_unregister_address(&tracepoint_);
}

void ObjectEventHook::enable() {
  if (enabled_) return;
  rb_tracepoint_enable(tracepoint_);
  enabled_ = true;
}

void ObjectEventHook::disable() {
  if (!enabled_) return;
  rb_tracepoint_disable(tracepoint_);
  enabled_ = false;
}

void ObjectEventHook::dispatch(VALUE tracepoint, void* self) {
  auto* hook = static_cast<ObjectEventHook*>(self);
  rb_trace_arg_t* arg = rb_tracearg_from_tracepoint(tracepoint);
  hook->callback_(rb_tracearg_object(arg), hook->data_);
}

}  // namespace memprof::ruby
