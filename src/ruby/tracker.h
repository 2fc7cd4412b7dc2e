// The Ruby object tracker: which live objects were allocated where.
//
// Allocations arrive through record() from the GOT hooks on libruby's allocation entry points
// and the BasicObject allocator (allocation_hooks.h), or from the NEWOBJ event where hooks
// cannot reach (internal_events.h). Each becomes one LiveTable entry keyed by address.
//
// Frees are not observed. An entry is live iff its slot lies in a live heap page and the slot's
// current builtin type equals the recorded one. This is exact because every allocation of a
// tracked type is seen (tracked_types.h): a slot reused by a seen allocation overwrites the
// entry, and an unseen allocation reusing it has an untracked type, which differs from the
// recorded one. Dead entries are pruned lazily: when the table doubled since the last prune
// (from a postponed job on the main Ractor, never inside a hook) and before every read-out.
//
// GC compaction moves objects and can move an untracked object into the slot of a tracked one
// that died in the same GC, which the type check cannot detect. While compaction can happen
// (GC.compact, GC.verify_compaction_references, GC.auto_compact), the FREEOBJ event erases
// entries as objects are swept, and the compaction watcher rekeys the survivors with
// rb_gc_location() during the reference-update phase.
//
// Threads: record() runs on Ruby threads, which hold their Ractor's lock. While the main Ractor
// is alone that is the GVL and nothing else is needed; once Ractors allocate in parallel the
// tables are shared under a RactorLock (ractors.h). Read-outs copy what they need under that
// lock and call Ruby only after releasing it. record() and forget() run inside allocation and
// GC paths: they never allocate Ruby objects, raise, or call into Ruby.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/track/aggregate.h"
#include "core/track/live_table.h"
#include "core/track/site_table.h"
#include "core/util/result.h"
#include "ruby/execution_context.h"
#include "ruby/ractors.h"
#include "ruby/ruby_headers.h"
#include "ruby/tracked_types.h"

namespace memprof::ruby {

class AllocationHooks;
class InternalEventHook;
class PostponedJob;

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
  bool active() const { return active_.load(std::memory_order_relaxed); }
  Mechanism mechanism() const { return mechanism_; }

  // Hot path: called after every hooked allocation returns. `from_event`: called from Ruby's
  // NEWOBJ event, which has already adjusted the frame's program counter (see current_site).
  void record(VALUE object, bool from_event = false) noexcept {
    if (!active() || RB_SPECIAL_CONST_P(object)) return;
    // A hook that a child forked mid-change could not remove (core/hook/hook_change.h) still
    // calls in when tracking restarted there through the NEWOBJ event: each object once.
    if (!from_event && mechanism_ != Mechanism::kHooks) [[unlikely]] return;
    int type = slot_type(object);
    if (!is_tracked_type(type)) return;
    if (type == RUBY_T_DATA && is_ractor(object)) [[unlikely]] on_ractor_created();
    if (several_ractors()) [[unlikely]] {
      record_among_ractors(object, type, from_event);
      return;
    }
    if (audit_ != nullptr) [[unlikely]] audit_->add(object, type, false);
    uint32_t site = paused_      ? track::SiteTable::kInternalSite
                    : from_event ? current_site()
                                 : current_site_after_hook(true);
    table_.record(object, site, static_cast<uint8_t>(type | window_mark_), generation());
    if (table_.wants_prune()) schedule_prune();
  }
  // FREEOBJ while compaction may happen or an allocation window is open.
  void forget(VALUE object) noexcept {
    RactorLock::Scope lock(lock_);
    std::optional<track::LiveEntry> erased = table_.erase(object);
    if (erased && erased->in_window) [[unlikely]] note_window_free(object, erased->site);
  }

  // An allocation window (`memprof report -p PID`): what a running process allocates during a
  // time, freed or not, without disabling its GC as Memprof.report does for a block. Entries
  // recorded while it is open are marked (LiveTable::kInWindow); frees are watched, and the
  // marked objects freed are summed by site and class as they go. Needs tracking on; a second
  // begin starts a new window. Allocations seen only among several Ractors stay exact (they
  // are marked under the lock); their frees are seen by the one GC. Before Ruby 3.3 the free
  // watch cannot survive a Ractor's start (see update_gc_events): refused once Ractors ran.
  Status begin_window();
  bool window_open() const { return window_mark_ != 0; }
  // Closes it: the marks are cleared, and the freed objects' groups returned (class keys as
  // they were at the free: the class itself may be gone since). Fails when frees could not be
  // summed: for want of memory, or because a Ractor started before Ruby 3.3.
  Result<std::vector<track::Group>> end_window();

  // Why the counts cannot be trusted, or OK: a Ractor ran while allocations were seen through
  // the NEWOBJ event, which Ruby fires only in the Ractor that enabled it.
  Status exactness() const;

  // Drops entries whose object is gone and returns how many. Walks the heap pages (finishes a
  // lazy sweep first); must not run inside GC or a hook. Fails while other Ractors run (see
  // ractors.h), after waiting a moment for those that are ending.
  Result<size_t> prune();
  // Forgets every tracked object (Memprof.stats!). Tracking goes on.
  void clear() {
    RactorLock::Scope lock(lock_);
    table_.clear();
  }
  // Runs fn(table, sites) with the tables to itself; fn must not call into Ruby (ractors.h).
  template <typename Fn>
  decltype(auto) with_tables(Fn&& fn) const {
    RactorLock::Scope lock(lock_);
    return fn(table_, sites_);
  }

  // While compaction may run, watch frees (see the header comment). Nested calls nest.
  void begin_compaction_window();
  void end_compaction_window();
  // Kept on for the whole session while GC.auto_compact is on.
  void set_auto_compaction(bool on);
  // From the compaction watcher's dcompact, during the reference-update phase of GC.
  void on_compaction() noexcept;
  // Whether a forked child forgets what the parent tracked (preforking servers load the app
  // before forking, so by default a worker keeps seeing those objects).
  void set_reset_on_fork(bool reset) { reset_on_fork_ = reset; }
  // Entries dropped because a compaction ran without the free watch (an unwrapped path).
  size_t lost_to_compaction() const { return lost_to_compaction_; }

  // Objects the profiler itself allocates on this thread while paused are kept at the
  // internal site. Per thread: another Ractor's allocations meanwhile are the program's.
  class Pause {
   public:
    explicit Pause(Tracker&) : was_(paused_) { paused_ = true; }
    ~Pause() { paused_ = was_; }
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;

   private:
    bool was_;
  };

  // For the attach agent: everything its own Ruby thread allocates, and what its postponed jobs
  // allocate on the thread they interrupt, is memprof's. Returns the previous state.
  static bool set_this_thread_paused(bool paused) { return std::exchange(paused_, paused); }

  void set_audit_log(AuditLog* log) { audit_ = log; }

  // What the hooks patched: GOT slots, and call sites (a ruby with libruby linked in).
  size_t hooked_slots() const;
  size_t hooked_call_sites() const;
  // Why :auto fell back to the NEWOBJ event (the last time it did), or empty.
  const std::string& fallback_reason() const { return fallback_reason_; }

 private:
  Tracker();
  // Up to Ruby 3.2, "leaf" instructions (newarray, duparray, putstring, ...) advance the
  // frame's program counter only after they finish, while line lookup assumes it already points
  // past the current instruction; a leaf instruction that allocates would be charged to the
  // line of the instruction before it. gc.c bumps the counter around its own NEWOBJ event for
  // this reason (gc_event_hook_body); a hook does the same when the innermost frame is a Ruby
  // frame (an allocation made by a C function sits under a C frame, and its caller's counter
  // was saved past the call). Ruby 3.3 made the instructions that allocate save the counter
  // first, and dropped the bump from gc.c: there the counter is read as it is.
  //
  // An allocation made by an instruction also has a cheap name for its site: the program
  // counter. Same counter, same instruction, same file and line -- as long as the iseq that
  // holds it is alive. Code compiled and dropped (eval, ERB#result, class_eval strings) frees
  // its iseq, and the next iseq can get the same instruction buffer back from malloc, so a
  // cached answer must not outlive a sweep. An iseq that ran before the end of a GC's marking
  // is freed, if at all, by that GC's sweep or a later one; one that runs after it survives
  // until the next GC's marking ends. So cached answers are tagged with the number of marking
  // ends seen (the GC_END_MARK event) -- not with rb_gc_count(), which changes when marking
  // starts: code born during incremental marking can die in the same GC. That skips the frame
  // walk and line-table search of rb_source_location_cstr for most allocations of a loop.
  // An allocation made by a C function (Integer#to_s, String#upcase, ...) sits under C frames;
  // its site is the innermost Ruby frame's line, which that frame's program counter, saved past
  // the call, names just as well: those are cached by that counter too, apart from the
  // instructions' own allocations (before 3.3 an instruction's counter is bumped for the
  // lookup, so the same counter can name two lines: the call's and the next instruction's).
  // `use_cache` is false between Ractors: the event only counts the main Ractor's GCs.
  uint32_t current_site_after_hook(bool use_cache) noexcept {
    ExecutionContextHead* ec = execution_context_->current();
    ControlFrameHead* cfp = ec != nullptr ? ec->cfp : nullptr;
    if (cfp == nullptr || cfp->ep == nullptr) return current_site();
    bool in_c_function = cfp->ep[0] & kFrameFlagCFrame;
    if (in_c_function) {
      cfp = execution_context_->ruby_level_frame(ec, cfp);
      if (cfp == nullptr) return current_site();
    }
    const VALUE* pc = cfp->pc;
    if (pc == nullptr) return current_site();
    PcSite* cached = nullptr;
    if (use_cache) {
      auto& cache = in_c_function ? caller_pc_sites_ : pc_sites_;
      cached = &cache[(reinterpret_cast<uintptr_t>(pc) >> 3) % cache.size()];
      if (cached->pc == pc && cached->marks == marks_ended_) return cached->site;
    }
    bool bump = RUBY_API_VERSION_CODE < 30300 && !in_c_function;
    if (bump) cfp->pc = pc + 1;
    uint32_t site = current_site();
    if (bump) cfp->pc = pc;
    if (cached != nullptr) *cached = PcSite{pc, marks_ended_, site};
    return site;
  }
  // The allocation's generation as ObjectSpace.trace_object_allocations records it (the GC
  // count; a GC the allocation started has been counted by the time it returns), so that a
  // dump annotated with it can be diffed against one written by Ruby's own tracing.
  static uint32_t generation() noexcept { return static_cast<uint32_t>(rb_gc_count()); }
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
  // record() once a second Ractor exists: under the lock, without the program-counter cache.
  void record_among_ractors(VALUE object, int type, bool from_event) noexcept;
  // Sums a freed object born in the open window (one lookup: forget() already erased it).
  void note_window_free(VALUE object, uint32_t site) noexcept;
  static constexpr int kRactorPatienceMs = 1000;
  void schedule_prune() noexcept;
  void prune_or_forget();
  static void run_scheduled_prune(void* tracker);
  // Runs on the thread that calls Ractor.new, before the new Ractor's thread exists.
  void on_ractor_created() noexcept;
  // Turns the FREEOBJ and GC_END_MARK hooks on or off as the state now needs.
  void update_gc_events() noexcept;
  void after_fork_in_child() noexcept;
  bool reset_on_fork_ = false;
  std::string fallback_reason_;

  struct PcSite {
    const VALUE* pc = nullptr;
    uint64_t marks = 0;
    uint32_t site = track::SiteTable::kUnknownSite;
  };
  std::array<PcSite, 256> pc_sites_{};         // allocations made by an instruction
  std::array<PcSite, 256> caller_pc_sites_{};  // made by C functions, by their Ruby caller's pc
  uint64_t marks_ended_ = 0;  // GC_END_MARK events seen while tracking, plus one per start

  std::atomic<bool> active_ = false;
  const ExecutionContextLocator* execution_context_ = nullptr;  // set while the hooks record
  // Initial-exec: read on every allocation; a general-dynamic TLS access is a call.
  static thread_local bool paused_ __attribute__((tls_model("initial-exec")));
  bool prune_scheduled_ = false;
  bool ractor_started_while_tracking_ = false;
  Mechanism mechanism_ = Mechanism::kAuto;
  int compaction_windows_ = 0;
  bool auto_compaction_ = false;
  size_t lost_to_compaction_ = 0;
  AuditLog* audit_ = nullptr;
  // LiveTable::kInWindow while an allocation window is open, else 0: or'ed into every record.
  uint8_t window_mark_ = 0;
  // The window's freed objects by (site, class key); bounded by the number of distinct pairs.
  struct PairHash {
    size_t operator()(const std::pair<uint32_t, uint64_t>& p) const noexcept {
      return std::hash<uint64_t>()(p.second * 31 + p.first);
    }
  };
  std::unordered_map<std::pair<uint32_t, uint64_t>, track::Group, PairHash> window_freed_;
  size_t window_frees_lost_ = 0;  // frees not summed for want of memory
  bool window_frees_unwatched_ = false;  // a Ractor started: the free watch had to go
  track::LiveTable table_;
  track::SiteTable sites_;
  std::unique_ptr<AllocationHooks> hooks_;
  mutable RactorLock lock_;
  std::unique_ptr<InternalEventHook> newobj_event_;
  std::unique_ptr<InternalEventHook> freeobj_event_;
  std::unique_ptr<InternalEventHook> end_mark_event_;
  std::unique_ptr<PostponedJob> prune_job_;
};

}  // namespace memprof::ruby
