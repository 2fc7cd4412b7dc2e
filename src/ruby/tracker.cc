#include "ruby/tracker.h"

#include <pthread.h>

#include "ruby/allocation_hooks.h"
#include "ruby/heap_liveness.h"
#include "ruby/object_events.h"

namespace memprof::ruby {

const char* mechanism_name(Mechanism mechanism) {
  switch (mechanism) {
    case Mechanism::kAuto: return "auto";
    case Mechanism::kHooks: return "hooks";
    case Mechanism::kTracepoint: return "tracepoint";
  }
  return "auto";
}

Tracker& Tracker::instance() {
  // Leaked on purpose: hooks and events may call in until the process is gone.
  static Tracker* tracker = new Tracker();
  return *tracker;
}

Tracker::Tracker() {
  newobj_event_ = std::make_unique<ObjectEventHook>(
      RUBY_INTERNAL_EVENT_NEWOBJ,
      [](VALUE object, void* self) { static_cast<Tracker*>(self)->record(object, true); }, this);
  freeobj_event_ = std::make_unique<ObjectEventHook>(
      RUBY_INTERNAL_EVENT_FREEOBJ,
      [](VALUE object, void* self) { static_cast<Tracker*>(self)->forget(object); }, this);
  // The child of a fork starts with an empty table; tracking goes on if it was on.
  pthread_atfork(nullptr, nullptr, [] { instance().after_fork_in_child(); });
}

Status Tracker::start(Mechanism mechanism) {
  if (active_) return err("already started");
  table_.clear();
  if (mechanism != Mechanism::kTracepoint) {
    auto hooks = AllocationHooks::install(*this);
    if (hooks.ok()) {
      hooks_ = std::move(*hooks);
      mechanism_ = Mechanism::kHooks;
    } else if (mechanism == Mechanism::kHooks) {
      return err("cannot hook Ruby's allocator: {}", hooks.message());
    } else {
      mechanism = Mechanism::kTracepoint;
    }
  }
  if (mechanism == Mechanism::kTracepoint) {
    newobj_event_->enable();
    mechanism_ = Mechanism::kTracepoint;
  }
  active_ = true;
  update_free_watch();
  return ok_status();
}

void Tracker::stop() {
  if (!active_) return;
  active_ = false;
  hooks_.reset();
  newobj_event_->disable();
  update_free_watch();
  mechanism_ = Mechanism::kAuto;
}

size_t Tracker::hooked_slots() const { return hooks_ ? hooks_->patched_slots() : 0; }

size_t Tracker::prune() {
  Pause pause(*this);
  track::HeapRanges ranges = collect_heap_ranges();
  return table_.retain_if([&](const track::LiveEntry& e) { return entry_is_live(e, ranges); });
}

void Tracker::schedule_prune() noexcept {
  if (prune_scheduled_) return;
  // Registration fails only when Ruby's job buffer is full; the next allocation retries.
  prune_scheduled_ = rb_postponed_job_register_one(0, &Tracker::run_scheduled_prune, this) != 0;
}

void Tracker::run_scheduled_prune(void* self) {
  auto* tracker = static_cast<Tracker*>(self);
  tracker->prune_scheduled_ = false;
  if (tracker->active_ && tracker->table_.wants_prune()) tracker->prune();
}

void Tracker::begin_compaction_window() {
  ++compaction_windows_;
  update_free_watch();
  // Entries that died before the free watch started must go before objects can move into
  // their slots; from here on the watch removes the rest as they are swept.
  if (active_) prune();
}

void Tracker::end_compaction_window() {
  if (compaction_windows_ > 0) --compaction_windows_;
  update_free_watch();
}

void Tracker::set_auto_compaction(bool on) {
  auto_compaction_ = on;
  if (on && active_) prune();
  update_free_watch();
}

void Tracker::update_free_watch() {
  if (active_ && (compaction_windows_ > 0 || auto_compaction_))
    freeobj_event_->enable();
  else
    freeobj_event_->disable();
}

void Tracker::on_compaction() noexcept {
  if (table_.size() == 0) return;
  if (!freeobj_event_->enabled()) {
    // A compaction we were not warned of: dead entries may now name moved-in objects and no
    // slot can be read safely. Forget everything rather than report wrong sites.
    lost_to_compaction_ += table_.size();
    table_.clear();
    return;
  }
  // Every entry is live here (pruned before, frees erased since), so each slot is readable:
  // it holds the object or, if the object moved, a T_MOVED forwarding to it.
  table_.rekey([](const track::LiveEntry& e) -> uintptr_t {
    VALUE now = rb_gc_location(e.address);
    return slot_type(now) == e.type ? now : 0;
  });
}

void Tracker::after_fork_in_child() noexcept {
  table_.clear();
  prune_scheduled_ = false;
}

}  // namespace memprof::ruby
