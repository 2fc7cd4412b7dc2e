#include "ruby/compaction_watcher.h"

#include "ruby/ruby_headers.h"
#include "ruby/tracker.h"

namespace memprof::ruby {

namespace {

void compacted(void* tracker) { static_cast<Tracker*>(tracker)->on_compaction(); }

const rb_data_type_t kWatcherType = {
    "memprof/compaction_watcher",
    {nullptr, nullptr, nullptr, &compacted, {nullptr}},
    nullptr,
    nullptr,
    RUBY_TYPED_FREE_IMMEDIATELY,
};

VALUE g_watcher = Qnil;

}  // namespace

void install_compaction_watcher(Tracker& tracker) {
  if (!NIL_P(g_watcher)) return;
  g_watcher = TypedData_Wrap_Struct(rb_cObject, &kWatcherType, &tracker);
  rb_obj_hide(g_watcher);
  rb_gc_register_mark_object(g_watcher);
}

}  // namespace memprof::ruby
