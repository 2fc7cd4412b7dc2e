#include "ruby/dump_own_objects.h"

#include <algorithm>

#include "ruby/heap_liveness.h"
#include "ruby/tracker.h"

namespace memprof::ruby {
namespace {

// A dump_all call makes a few dozen objects; finalizers or a trap handler running inside it
// could make many more. Past this many, the rest are left unmarked (shown as the app's).
constexpr size_t kMostRecorded = size_t{1} << 16;

// The bits of an object's flags that say what it is: its type and, for an IMEMO, its kind
// (imemo_type: the 4 bits at the user flags' shift, in every Ruby memprof supports).
constexpr VALUE kKindBits = RUBY_T_MASK | (VALUE{0xf} << RUBY_FL_USHIFT);

}  // namespace

DumpOwnObjects& DumpOwnObjects::instance() {
  static DumpOwnObjects* objects = new DumpOwnObjects();
  return *objects;
}

void DumpOwnObjects::on_new_object(VALUE object, void* self) {
  auto& objects = *static_cast<DumpOwnObjects*>(self);
  if (rb_thread_current() != objects.thread_) {
    objects.made_.erase(object);
  } else if (objects.made_.size() < kMostRecorded) {
    objects.made_.insert(object);
  }
}

VALUE DumpOwnObjects::kind_of(uintptr_t address) {
  return reinterpret_cast<const struct RBasic*>(address)->flags & kKindBits;
}

void DumpOwnObjects::begin() {
  if (depth_ > 0) {
    ++depth_;
    return;
  }
  // Made on first use (a Ruby object), before recording starts; counted once made (out of
  // memory leaves the window closed).
  if (!newobj_) newobj_ = std::make_unique<InternalEventHook>(RUBY_INTERNAL_EVENT_NEWOBJ, &DumpOwnObjects::on_new_object, this);
  ++depth_;
  forget();
  thread_ = rb_thread_current();
  was_paused_ = Tracker::set_this_thread_paused(true);
  newobj_->enable();
}

bool DumpOwnObjects::still_there(const Carried& object, const track::HeapRanges& ranges) {
  if (!ranges.contains_slot(object.address) || kind_of(object.address) != object.kind) return false;
  if (NIL_P(object.object_id)) return true;
  // Checked before asking: rb_obj_id would give an id to another object in the slot.
  const VALUE value = static_cast<VALUE>(object.address);
  return (RBASIC(value)->flags & RUBY_FL_SEEN_OBJ_ID) != 0 && rb_obj_id(value) == object.object_id;
}

void DumpOwnObjects::dump_written() {
  own_.assign(made_.begin(), made_.end());
  if (!carried_.empty()) {
    // Between two calls nothing watched the carried objects: their pages may be gone, their
    // slots taken.
    const track::HeapRanges ranges = collect_heap_ranges();
    std::erase_if(carried_, [&](const Carried& object) { return !still_there(object, ranges); });
    for (const Carried& object : carried_) own_.push_back(object.address);
  }
  std::sort(own_.begin(), own_.end());
  own_.erase(std::unique(own_.begin(), own_.end()), own_.end());
  in_dump_.assign(own_.size(), false);
}

bool DumpOwnObjects::own(uintptr_t address) {
  const auto found = std::lower_bound(own_.begin(), own_.end(), address);
  if (found == own_.end() || *found != address) return false;
  in_dump_[static_cast<size_t>(found - own_.begin())] = true;
  return true;
}

bool DumpOwnObjects::close_window() {
  if (depth_ == 0 || --depth_ > 0) return false;
  newobj_->disable();
  Tracker::set_this_thread_paused(was_paused_);
  thread_ = Qnil;
  return true;
}

void DumpOwnObjects::forget() {
  made_.clear();
  own_.clear();
  in_dump_.clear();
}

void DumpOwnObjects::end() {
  if (!close_window()) return;
  if (!made_.empty()) carry_survivors();
  forget();
}

void DumpOwnObjects::abandon() {
  if (close_window()) forget();
}

void DumpOwnObjects::carry_survivors() {
  // Some were freed since they were made, and their pages may be gone.
  const track::HeapRanges ranges = collect_heap_ranges();
  for (uintptr_t address : made_) {
    const auto found = std::lower_bound(own_.begin(), own_.end(), address);
    if (found != own_.end() && *found == address && in_dump_[static_cast<size_t>(found - own_.begin())]) continue;
    if (!ranges.contains_slot(address)) continue;
    const int type = slot_type(address);
    if (type == RUBY_T_NONE || type == RUBY_T_MOVED || type == RUBY_T_ZOMBIE) continue;
    const bool known = std::any_of(carried_.begin(), carried_.end(),
                                   [&](const Carried& object) { return object.address == address; });
    if (known || carried_.size() >= kMostRecorded) continue;
    const VALUE object_id = type == RUBY_T_IMEMO ? Qnil : rb_obj_id(static_cast<VALUE>(address));
    carried_.push_back({address, kind_of(address), object_id});
  }
}

void DumpOwnObjects::compacted() {
  made_.clear();
  carried_.clear();
}

}  // namespace memprof::ruby
