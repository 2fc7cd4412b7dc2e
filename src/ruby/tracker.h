// The Ruby object tracker: which live objects were allocated where.
//
// Allocations arrive through record() from the GOT hooks on libruby's allocation entry points
// and the BasicObject allocator (allocation_hooks.h), or from the NEWOBJ event where hooks
// cannot reach (object_events.h). Each becomes one LiveTable entry keyed by address.
//
// Frees are not observed. An entry is live iff its slot lies in a live heap page and the slot's
// current builtin type equals the recorded one. This is exact because every allocation of a
// tracked type is seen (tracked_types.h): a slot reused by a seen allocation overwrites the
// entry, and an unseen allocation reusing it has an untracked type, which differs from the
// recorded one. Dead entries are pruned lazily: when the table doubled since the last prune
// (from a postponed job, never inside a hook) and before every read-out.
//
// GC compaction moves objects and can move an untracked object into the slot of a tracked one
// that died in the same GC, which the type check cannot detect. While compaction can happen
// (GC.compact, GC.verify_compaction_references, GC.auto_compact), the FREEOBJ event erases
// entries as objects are swept, and the compaction watcher rekeys the survivors with
// rb_gc_location() during the reference-update phase.
//
// Everything here runs on a Ruby thread holding the GVL. record() and forget() run inside
// allocation and GC paths: they never allocate Ruby objects, raise, or call into Ruby.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/track/live_table.h"
#include "core/track/site_table.h"
#include "core/util/result.h"
#include "ruby/ruby_headers.h"
#include "ruby/tracked_types.h"

namespace memprof::ruby {

class AllocationHooks;
class ObjectEventHook;

// Coverage audit (see coverage_audit.h): a bounded log of what the hooks recorded,
// interleaved with Ruby's NEWOBJ events.
struct AuditRecord {
  uintptr_t address;
  uint8_t type;
  bool from_event;  // NEWOBJ event rather than a hook
};
struct AuditLog {
  std::vector<AuditRecord> records;  // reserved up front; never reallocated while logging
  bool overflowed = false;
  void add(uintptr_t address, int type, bool from_event) noexcept {
    if (records.size() == records.capacity()) {
      overflowed = true;
      return;
    }
    records.push_back(AuditRecord{address, static_cast<uint8_t>(type), from_event});
  }
};

enum class Mechanism { kAuto, kHooks, kTracepoint };
const char* mechanism_name(Mechanism mechanism);

class Tracker {
 public:
  // The process-wide tracker. Created on first use; never destroyed (hooks may run until the
  // process exits).
  static Tracker& instance();

  // kAuto picks GOT hooks when libruby is a shared library, else the NEWOBJ event.
  Status start(Mechanism mechanism);
  void stop();
  bool active() const { return active_; }
  Mechanism mechanism() const { return mechanism_; }

  // Hot path: called after every hooked allocation returns. `from_event`: called from Ruby's
  // NEWOBJ event, which has already adjusted the frame's program counter (see current_site).
  void record(VALUE object, bool from_event = false) noexcept {
    if (!active_ || RB_SPECIAL_CONST_P(object)) return;
    int type = slot_type(object);
    if (!is_tracked_type(type)) return;
    if (audit_ != nullptr) [[unlikely]] audit_->add(object, type, false);
    uint32_t site = paused_    ? track::SiteTable::kInternalSite
                    : from_event ? current_site()
                                 : current_site_after_hook();
    table_.record(object, site, static_cast<uint8_t>(type));
    if (table_.wants_prune()) schedule_prune();
  }
  // FREEOBJ while compaction may happen.
  void forget(VALUE object) noexcept { table_.erase(object); }

  // Drops entries whose object is gone. Walks the heap pages (finishes a lazy sweep first);
  // must not run inside GC or a hook. Returns the number of entries removed.
  size_t prune();
  // Forgets every tracked object (Memprof.stats!). Tracking goes on.
  void clear() { table_.clear(); }

  // While compaction may run, watch frees (see the header comment). Nested calls nest.
  void begin_compaction_window();
  void end_compaction_window();
  // Kept on for the whole session while GC.auto_compact is on.
  void set_auto_compaction(bool on);
  // From the compaction watcher's dcompact, during the reference-update phase of GC.
  void on_compaction() noexcept;
  // Entries dropped because a compaction ran without the free watch (an unwrapped path).
  size_t lost_to_compaction() const { return lost_to_compaction_; }

  // Objects the profiler itself allocates while paused are kept at the internal site.
  class Pause {
   public:
    explicit Pause(Tracker& t) : tracker_(t), was_(t.paused_) { t.paused_ = true; }
    ~Pause() { tracker_.paused_ = was_; }
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;

   private:
    Tracker& tracker_;
    bool was_;
  };

  void set_audit_log(AuditLog* log) { audit_ = log; }

  const track::LiveTable& table() const { return table_; }
  const track::SiteTable& sites() const { return sites_; }
  size_t hooked_slots() const;

 private:
  Tracker();
  // Ruby's "leaf" instructions (newarray, duparray, putstring, ...) advance the frame's
  // program counter only after they finish, while line lookup assumes it already points past
  // the current instruction; a leaf instruction that allocates would be charged to the line
  // of the instruction before it. gc.c bumps the counter around its own NEWOBJ event for this
  // reason (gc_event_hook_body); a hook does the same when the innermost frame is a Ruby
  // frame (an allocation made by a C function sits under a C frame, and its caller's counter
  // was saved past the call).
  //
  // An allocation made by an instruction also has a cheap name for its site: the program
  // counter. Same counter, same instruction, same file and line -- as long as the iseq that
  // holds it is alive, and iseqs are only freed by a GC, so cached answers are tagged with
  // rb_gc_count(). This skips the frame walk and line-table search of rb_source_location_cstr
  // for most allocations of a loop.
  uint32_t current_site_after_hook() noexcept {
    ExecutionContextHead* ec = current_execution_context();
    ControlFrameHead* cfp = ec != nullptr ? ec->cfp : nullptr;
    const VALUE* pc = cfp != nullptr ? cfp->pc : nullptr;
    if (pc == nullptr || cfp->ep == nullptr || (cfp->ep[0] & kFrameFlagCFrame)) return current_site();
    size_t gc_count = rb_gc_count();
    PcSite& cached = pc_sites_[(reinterpret_cast<uintptr_t>(pc) >> 3) % pc_sites_.size()];
    if (cached.pc == pc && cached.gc_count == gc_count) return cached.site;
    cfp->pc = pc + 1;
    uint32_t site = current_site();
    cfp->pc = pc;
    cached = PcSite{pc, gc_count, site};
    return site;
  }
  uint32_t current_site() noexcept {
    int line = 0;
    const char* file;
    if (rb_source_location_cstr != nullptr) {
      file = rb_source_location_cstr(&line);
    } else {
      file = rb_sourcefile();
      line = rb_sourceline();
    }
    return sites_.intern(file, line);
  }
  void schedule_prune() noexcept;
  static void run_scheduled_prune(void* tracker);
  void update_free_watch();
  void after_fork_in_child() noexcept;

  struct PcSite {
    const VALUE* pc = nullptr;
    size_t gc_count = 0;
    uint32_t site = track::SiteTable::kUnknownSite;
  };
  std::array<PcSite, 256> pc_sites_{};

  bool active_ = false;
  bool paused_ = false;
  bool prune_scheduled_ = false;
  Mechanism mechanism_ = Mechanism::kAuto;
  int compaction_windows_ = 0;
  bool auto_compaction_ = false;
  size_t lost_to_compaction_ = 0;
  AuditLog* audit_ = nullptr;
  track::LiveTable table_;
  track::SiteTable sites_;
  std::unique_ptr<AllocationHooks> hooks_;
  std::unique_ptr<ObjectEventHook> newobj_event_;
  std::unique_ptr<ObjectEventHook> freeobj_event_;
};

}  // namespace memprof::ruby
