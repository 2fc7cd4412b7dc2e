#include "ruby/tracker.h"

#include <pthread.h>

#include <algorithm>

#include "core/util/print_stderr.h"
#include "ruby/allocation_hooks.h"
#include "ruby/class_key.h"
#include "ruby/dump_own_objects.h"
#include "ruby/heap_liveness.h"
#include "ruby/internal_events.h"
#include "ruby/postponed_job.h"

namespace memprof::ruby {

namespace {

// Ruby before 3.3 runs GC event hooks on a Ractor's thread before that thread has a control
// frame -- a GC while the new Ractor allocates its $stdin, $stdout and $stderr -- and crashes
// reading it (Ruby bug #18464, fixed in 3.3). So on those versions memprof turns its GC event
// hooks off at the first Ractor.new, which it sees when the Ractor object is recorded, before
// the new thread exists, and leaves them off.
constexpr bool kGcEventsSurviveRactorStart = RUBY_API_VERSION_CODE >= 30300;

bool gc_events_allowed() noexcept { return kGcEventsSurviveRactorStart || !several_ractors(); }

}  // namespace

const char* mechanism_name(Mechanism mechanism) {
  switch (mechanism) {
    case Mechanism::kAuto: return "auto";
    case Mechanism::kHooks: return "hooks";
    case Mechanism::kTracepoint: return "tracepoint";
  }
  return "auto";
}

thread_local bool Tracker::paused_ = false;

Tracker& Tracker::instance() {
  // Leaked on purpose: hooks and events may call in until the process is gone.
  static Tracker* tracker = new Tracker();
  return *tracker;
}

Tracker::Tracker() {
  newobj_event_ = std::make_unique<InternalEventHook>(
      RUBY_INTERNAL_EVENT_NEWOBJ,
      [](VALUE object, void* self) { static_cast<Tracker*>(self)->record(object, true); }, this);
  freeobj_event_ = std::make_unique<InternalEventHook>(
      RUBY_INTERNAL_EVENT_FREEOBJ,
      [](VALUE object, void* self) { static_cast<Tracker*>(self)->forget(object); }, this);
  end_mark_event_ = std::make_unique<InternalEventHook>(
      RUBY_INTERNAL_EVENT_GC_END_MARK,
      [](VALUE, void* self) { ++static_cast<Tracker*>(self)->marks_ended_; }, this);
  prune_job_ = std::make_unique<PostponedJob>(&Tracker::run_scheduled_prune, this);
  pthread_atfork(nullptr, nullptr, [] { instance().after_fork_in_child(); });
}

Status Tracker::start(Mechanism mechanism) {
  if (active()) return err("already started");
  // Ractors started before tracking: the Ractor objects were allocated unseen. (Only the
  // NEWOBJ event needs them ended: allow those that are ending a moment.)
  bool ractors_running =
      mechanism == Mechanism::kTracepoint ? !main_ractor_alone(kRactorPatienceMs) : living_ractors() > 1;
  if (ractors_running) note_ractor_start();
  ractor_started_while_tracking_ = false;
  clear();
  if (mechanism != Mechanism::kTracepoint) {
    AllocationHooks::prepare_without_gvl();
    auto hooks = [&]() -> Result<std::unique_ptr<AllocationHooks>> {
      MEMPROF_TRY(locator, execution_context_locator());
      execution_context_ = locator;
      return AllocationHooks::install(*this);
    }();
    if (hooks.ok()) {
      hooks_ = std::move(*hooks);
      mechanism_ = Mechanism::kHooks;
    } else if (mechanism == Mechanism::kHooks) {
      return err("cannot hook Ruby's allocator: {}", hooks.message());
    } else {
      mechanism = Mechanism::kTracepoint;
      // Said once per process: the fallback costs about twice the hooks' overhead.
      if (fallback_reason_.empty())
        print_stderr("memprof: tracking through Ruby's NEWOBJ event instead of hooks ({})\n",
                   hooks.message());
      fallback_reason_ = hooks.message();
    }
  }
  if (mechanism == Mechanism::kTracepoint) {
    if (ractors_running)
      return err("Ractors are running, and Ruby's NEWOBJ event (mechanism :tracepoint) fires "
                 "only in the main Ractor: their objects would go uncounted");
    newobj_event_->enable();
    mechanism_ = Mechanism::kTracepoint;
  } else {
    ++marks_ended_;  // no program-counter answer of an earlier session is trusted
  }
  active_ = true;
  update_gc_events();
  return ok_status();
}

void Tracker::stop() {
  if (!active()) return;
  (void)end_window();
  active_ = false;
  hooks_.reset();
  newobj_event_->disable();
  update_gc_events();
  mechanism_ = Mechanism::kAuto;
}

size_t Tracker::hooked_slots() const { return hooks_ ? hooks_->patched_slots() : 0; }
size_t Tracker::hooked_call_sites() const { return hooks_ ? hooks_->patched_call_sites() : 0; }

Status Tracker::exactness() const {
  if (mechanism_ == Mechanism::kTracepoint && ractor_started_while_tracking_)
    return err("a Ractor was started while memprof tracked through Ruby's NEWOBJ event "
               "(mechanism :tracepoint), which Ruby fires only in the main Ractor: objects "
               "made in other Ractors were not counted and their slots may have been taken "
               "for the main Ractor's objects");
  return ok_status();
}

void Tracker::record_among_ractors(VALUE object, int type, bool from_event) noexcept {
  RactorLock::Scope lock(lock_);
  uint32_t site = paused_      ? track::SiteTable::kInternalSite
                  : from_event ? current_site()
                               : current_site_after_hook(false);
  table_.record(object, site, static_cast<uint8_t>(type | window_mark_), generation());
  if (table_.wants_prune()) schedule_prune();
}

void Tracker::note_window_free(VALUE object, uint32_t site) noexcept {
  VALUE klass = reinterpret_cast<const struct RBasic*>(object)->klass;
  if (klass == 0) return;  // hidden VM internals are never shown
  uint64_t class_key = class_key_of(object, klass);
  // The object is whole until the FREEOBJ hooks return; memsize_of only reads it.
  uint64_t bytes = rb_obj_memsize_of(object);
  try {
    auto [it, fresh] = window_freed_.try_emplace({site, class_key},
                                                 track::Group{site, class_key, 0, 0});
    ++it->second.count;
    it->second.bytes += bytes;
  } catch (...) {
    ++window_frees_lost_;
  }
}

Status Tracker::begin_window() {
  if (!active()) return err("tracking is not started");
  if (!gc_events_allowed())
    return err("a window watches frees through a GC event hook, and Ruby {}.{} crashes when a "
               "Ractor starts while one is on (Ruby bug #18464, fixed in 3.3); this process has "
               "started Ractors",
               RUBY_API_VERSION_MAJOR, RUBY_API_VERSION_MINOR);
  if (window_open()) (void)end_window();
  window_frees_lost_ = 0;
  window_frees_unwatched_ = false;
  // The free watch as for compaction (which may also happen in the window): dead entries are
  // pruned first, frees erase entries from here on.
  begin_compaction_window();
  RactorLock::Scope lock(lock_);
  window_mark_ = track::LiveTable::kInWindow;
  return ok_status();
}

Result<std::vector<track::Group>> Tracker::end_window() {
  if (!window_open()) return err("no allocation window is open");
  std::vector<track::Group> freed;
  {
    RactorLock::Scope lock(lock_);
    window_mark_ = 0;
    table_.clear_window_marks();
    freed.reserve(window_freed_.size());
    for (const auto& [key, group] : window_freed_) freed.push_back(group);
    window_freed_.clear();
  }
  end_compaction_window();
  if (window_frees_unwatched_)
    return err("a Ractor started during the window, and Ruby {}.{} crashes when one starts while "
               "a GC event hook is on (Ruby bug #18464, fixed in 3.3): memprof stopped watching "
               "frees, so the window's counts are incomplete",
               RUBY_API_VERSION_MAJOR, RUBY_API_VERSION_MINOR);
  if (window_frees_lost_ != 0)
    return err("memory ran out while summing the window's frees ({} not counted)",
               window_frees_lost_);
  return freed;
}

Result<size_t> Tracker::prune() {
  if (several_ractors() && !main_ractor_alone(kRactorPatienceMs))
    return err("{} Ractors are running: Ruby offers no safe way to walk the heap while other "
               "Ractors allocate (its page walk races with their page allocation), so memprof "
               "cannot tell which tracked objects are alive; read the results once they have "
               "finished",
               living_ractors());
  Pause pause(*this);
  track::HeapRanges ranges = collect_heap_ranges();
  RactorLock::Scope lock(lock_);
  return table_.retain_if([&](const track::LiveEntry& e) { return entry_is_live(e, ranges); });
}

void Tracker::schedule_prune() noexcept {
  if (prune_scheduled_) return;
  // Fails only when Ruby's job queue is full (before 3.3); the next allocation retries.
  prune_scheduled_ = prune_job_->trigger();
}

void Tracker::run_scheduled_prune(void* self) {
  auto* tracker = static_cast<Tracker*>(self);
  bool wanted = tracker->with_tables([&](const track::LiveTable& table, const track::SiteTable&) {
    tracker->prune_scheduled_ = false;
    return table.wants_prune();
  });
  // The job may run on any Ractor's thread; with only one Ractor alive it is the main one.
  if (tracker->active() && wanted && (!several_ractors() || main_ractor_alone(0)))
    (void)tracker->prune();
}

void Tracker::begin_compaction_window() {
  ++compaction_windows_;
  update_gc_events();
  // Entries that died before the free watch started must go before objects can move into
  // their slots; from here on the watch removes the rest as they are swept.
  if (active()) prune_or_forget();
}

void Tracker::end_compaction_window() {
  if (compaction_windows_ > 0) --compaction_windows_;
  update_gc_events();
}

void Tracker::set_auto_compaction(bool on) {
  auto_compaction_ = on;
  if (on && active()) prune_or_forget();
  update_gc_events();
}

void Tracker::prune_or_forget() {
  if (prune().ok()) return;
  // Other Ractors run: dead entries cannot be told apart, and compaction could move untracked
  // objects into their slots. Forget everything rather than report wrong sites.
  RactorLock::Scope lock(lock_);
  lost_to_compaction_ += table_.size();
  table_.clear();
}

void Tracker::on_ractor_created() noexcept {
  note_ractor_start();
  ractor_started_while_tracking_ = true;
  update_gc_events();
}

void Tracker::update_gc_events() noexcept {
  // Without the free watch a compaction empties the table (on_compaction), and an open
  // window cannot sum its frees (end_window says so).
  bool watch_frees = active() && (compaction_windows_ > 0 || auto_compaction_);
  if (watch_frees && gc_events_allowed())
    freeobj_event_->enable();
  else
    freeobj_event_->disable();
  if (watch_frees && !gc_events_allowed() && window_open()) window_frees_unwatched_ = true;
  // The marking count tags the program-counter cache, which only a lone main Ractor uses.
  if (active() && mechanism_ == Mechanism::kHooks && !several_ractors())
    end_mark_event_->enable();
  else
    end_mark_event_->disable();
}

void Tracker::on_compaction() noexcept {
  RactorLock::Scope lock(lock_);
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
  lock_.reinitialize_after_fork();
  // The parent's pending prune job, if any, did not come along.
  prune_scheduled_ = false;
  // A window the parent had open is the parent's: the child's agent starts its own.
  if (window_open()) (void)end_window();
  // A child forked inside Memprof.dump_all (the attach agent's, or dump_all's own) writes the
  // dump: it needs the parent's table to annotate it.
  if (reset_on_fork_ && !DumpOwnObjects::instance().window_open()) table_.clear();
}

}  // namespace memprof::ruby
