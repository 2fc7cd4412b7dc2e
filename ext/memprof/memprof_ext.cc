// Memprof::Native: the extension's entry points. Each translates between Ruby values and the
// bridge (src/ruby/), and turns errors into Ruby exceptions only after every C++ object of the
// call is gone (a Ruby raise unwinds with longjmp, which would skip destructors).
//
// The public API and its argument checks live in lib/memprof.rb; these functions assume them.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/child_progress.h"
#include "core/util/stack_scrub.h"
#include "ruby/compaction_watcher.h"
#include "ruby/coverage_audit.h"
#include "ruby/dump_own_objects.h"
#include "ruby/forked_child.h"
#include "ruby/frame_reader.h"
#include "ruby/readout.h"
#include "ruby/ruby_headers.h"  // before any other Ruby header (it includes fmt first)
#include <ruby/thread.h>
#include "ruby/tracker.h"

namespace {

using memprof::Result;
using memprof::ruby::Mechanism;
using memprof::ruby::Tracker;

VALUE g_error_class = Qnil;  // Memprof::Error, defined by lib/memprof.rb before loading us

// What every entry point is registered as: a C++ exception must not reach Ruby's C frames,
// where std::terminate would abort the user's process (Memprof.start in a process at its
// ulimit -v did). Out of memory becomes NoMemoryError, as for Ruby's own allocations, anything
// else Memprof::Error; raised here, once the entry point's C++ objects are gone. Ruby's own
// raises inside (a longjmp) pass through.
template <typename Function, Function* function>
struct Entry;

template <typename... Args, VALUE (*function)(Args...)>
struct Entry<VALUE(Args...), function> {
  static VALUE call(Args... args) {
    char failure[256] = {};
    bool out_of_memory = false;
    try {
      return function(args...);
    } catch (const std::bad_alloc&) {
      out_of_memory = true;
    } catch (const std::exception& e) {
      std::strncpy(failure, e.what(), sizeof failure - 1);
    }
    if (out_of_memory) rb_memerror();
    rb_raise(g_error_class, "%s", failure);
  }
};
#define MEMPROF_ENTRY(function) (&Entry<decltype(function), function>::call)

// Runs `body` (returning Result<VALUE>) with the tracker paused, so objects made here are
// kept at memprof's internal site; raises Memprof::Error on failure.
template <typename Body>
VALUE guarded(Body&& body) {
  VALUE exception = Qnil;
  VALUE result = Qnil;
  {
    Tracker::Pause pause(Tracker::instance());
    Result<VALUE> outcome = body(Tracker::instance());
    if (outcome.ok())
      result = *outcome;
    else
      exception = rb_exc_new(g_error_class, outcome.message().data(),
                             static_cast<long>(outcome.message().size()));
  }
  if (!NIL_P(exception)) rb_exc_raise(exception);
  return result;
}

VALUE to_ruby(std::string_view s) { return rb_str_new(s.data(), static_cast<long>(s.size())); }

Result<Mechanism> parse_mechanism(VALUE name) {
  if (NIL_P(name)) return Mechanism::kAuto;
  if (!SYMBOL_P(name)) return memprof::err("mechanism must be a Symbol");
  std::string s = rb_id2name(SYM2ID(name));
  if (s == "auto") return Mechanism::kAuto;
  if (s == "hooks") return Mechanism::kHooks;
  if (s == "tracepoint") return Mechanism::kTracepoint;
  return memprof::err("unknown mechanism :{} (expected :auto, :hooks or :tracepoint)", s);
}

VALUE native_start(VALUE, VALUE mechanism_name) {
  return guarded([&](Tracker& t) -> Result<VALUE> {
    MEMPROF_TRY(mechanism, parse_mechanism(mechanism_name));
    if (t.active()) return Qfalse;
    MEMPROF_TRY_STATUS(t.start(mechanism));
    return Qtrue;
  });
}

VALUE native_stop(VALUE) {
  return guarded([](Tracker& t) -> Result<VALUE> {
    if (!t.active()) return Qfalse;
    t.stop();
    t.clear();
    return Qtrue;
  });
}

VALUE native_active_p(VALUE) { return Tracker::instance().active() ? Qtrue : Qfalse; }

VALUE native_mechanism(VALUE) {
  Tracker& t = Tracker::instance();
  if (!t.active()) return Qnil;
  return ID2SYM(rb_intern(memprof::ruby::mechanism_name(t.mechanism())));
}

VALUE native_stats_lines(VALUE) {
  return guarded([](Tracker& t) -> Result<VALUE> {
    MEMPROF_TRY(lines, memprof::ruby::stats_lines(t));
    VALUE out = rb_ary_new_capa(static_cast<long>(lines.size()));
    for (const std::string& line : lines) rb_ary_push(out, to_ruby(line));
    return out;
  });
}

VALUE native_clear(VALUE) {
  Tracker::instance().clear();
  return Qnil;
}

VALUE native_prune(VALUE) {
  return guarded([](Tracker& t) -> Result<VALUE> {
    MEMPROF_TRY(removed, t.prune());
    return SIZET2NUM(removed);
  });
}

VALUE groups_to_rows(const std::vector<memprof::track::NamedGroup>& groups) {
  VALUE rows = rb_ary_new_capa(static_cast<long>(groups.size()));
  for (const auto& g : groups) {
    VALUE row = rb_ary_new_capa(5);
    rb_ary_push(row, to_ruby(g.file));
    rb_ary_push(row, INT2NUM(g.line));
    rb_ary_push(row, to_ruby(g.class_name));
    rb_ary_push(row, ULL2NUM(g.count));
    rb_ary_push(row, ULL2NUM(g.bytes));
    rb_ary_push(rows, row);
  }
  return rows;
}

VALUE native_ignore_this_thread(VALUE) {
  Tracker::set_this_thread_paused(true);
  return Qnil;
}

// getpid(2), not Process.pid: Ruby 3.3+ caches the pid and clears the cache only in its own
// fork, so the attach agent's fork(2) child reads its parent's pid there.
VALUE native_getpid(VALUE) { return PIDT2NUM(::getpid()); }

VALUE native_live_groups(VALUE) {
  return guarded([](Tracker& t) -> Result<VALUE> {
    MEMPROF_TRY(groups, memprof::ruby::live_groups(t));
    return groups_to_rows(groups);
  });
}

VALUE native_report_begin() {
  return guarded([](Tracker& t) -> Result<VALUE> {
    if (t.active()) return memprof::err("tracking is already started");
    MEMPROF_TRY_STATUS(memprof::ruby::report_begin(t));
    return Qnil;
  });
}

VALUE report_end_of(VALUE kept) {
  std::vector<VALUE> kept_objects;
  if (RB_TYPE_P(kept, T_ARRAY))
    for (long i = 0; i < RARRAY_LEN(kept); ++i) kept_objects.push_back(rb_ary_entry(kept, i));
  return guarded([&](Tracker& t) -> Result<VALUE> {
    MEMPROF_TRY(snapshot, memprof::ruby::report_end(t, kept_objects));
    return rb_assoc_new(groups_to_rows(snapshot.allocated), groups_to_rows(snapshot.retained));
  });
}

// Calls `body` in a frame laid on zeroed stack. A read-out that decides what is retained runs
// a GC that reads the active frames conservatively, its own included, and a slot a frame never
// writes holds what earlier, deeper calls left there: perhaps the address of an object that
// died, whose slot a new object then took -- that object looked retained (Memprof.report on
// Ruby 3.3-static, 9 to 16 fresh processes in 150; the slot was the unused part of a Status).
// `body` must not be inlined: its frame has to be made after the zeroing.
template <VALUE (*body)()>
VALUE on_zeroed_stack(VALUE) {
  memprof::util::clear_stack_below();
  return body();
}

// Memprof.report's engine: [allocated rows, retained rows] of the block, which returns the
// objects its caller keeps on purpose (an Array, left out of "retained") or nil.
//
// The final GC reads every stack frame conservatively, and a stale pointer in any of them
// keeps garbage alive. So the block is called from here, not from Ruby code: its frames, the
// interpreter's included, are then popped below this frame, where clear_stack_below zeroes
// them before report_end's frames take their place. (Called from Ruby, the block's values
// could linger in the caller's interpreter frame, which stays active.)
__attribute__((noinline)) VALUE report_block() {
  rb_need_block();
  native_report_begin();
  int state = 0;
  VALUE kept = rb_protect(+[](VALUE) { return rb_yield_values(0); }, Qnil, &state);
  if (state != 0) {
    memprof::ruby::report_abort(Tracker::instance());
    rb_jump_tag(state);
  }
  memprof::util::clear_stack_below();
  return report_end_of(kept);
}

// `memprof report -p PID`: the attach agent opens and closes a window (readout.h).
VALUE native_window_begin(VALUE) {
  return guarded([](Tracker& t) -> Result<VALUE> {
    MEMPROF_TRY_STATUS(t.begin_window());
    return Qnil;
  });
}

__attribute__((noinline)) VALUE end_window() {
  return guarded([](Tracker& t) -> Result<VALUE> {
    MEMPROF_TRY(snapshot, memprof::ruby::window_end(t));
    return rb_assoc_new(groups_to_rows(snapshot.allocated), groups_to_rows(snapshot.retained));
  });
}

// Reads a frame (frame_reader.h) without the GVL; between reads Ruby runs its interrupts, so
// Thread#kill, exit, Timeout and trap handlers still work. Returns rb_protect's state: not 0
// when an interrupt raised (the exception is pending). RB_NOGVL_INTR_FAIL: without it, Ruby
// runs the interrupts itself on the way out of the blocking region and a raise there jumps past
// the caller (seen: Timeout around Memprof.dump_all left its child running to the end).
// `keep_waiting`, when given, is called (with the GVL) each `idle_ms` the writer stays silent;
// when it says no, the read ends there, incomplete.
int read_frame_between_interrupts(memprof::ruby::FrameReader& reader, int idle_ms = -1,
                                  const std::function<bool()>& keep_waiting = {}) {
  struct Read {
    memprof::ruby::FrameReader* reader;
    int idle_ms;
    bool ran;  // false: an interrupt was pending, and Ruby did not call it
  };
  for (;;) {
    Read read{&reader, keep_waiting ? idle_ms : -1, false};
    rb_nogvl(
        [](void* r) -> void* {
          auto* read = static_cast<Read*>(r);
          read->ran = true;
          read->reader->read_some(read->idle_ms);
          return nullptr;
        },
        &read, RUBY_UBF_IO, nullptr, RB_NOGVL_INTR_FAIL);
    if (read.ran && reader.idle()) {
      reader.clear_interruption();
      if (!keep_waiting()) return 0;
      continue;
    }
    if (read.ran && !reader.interrupted()) return 0;
    reader.clear_interruption();
    int state = 0;
    rb_protect([](VALUE) { rb_thread_check_ints(); return Qnil; }, Qnil, &state);
    if (state != 0) return state;
  }
}

// The attach agent's next request: a String, or nil at end of file.
VALUE native_read_frame(VALUE, VALUE fd, VALUE max_bytes) {
  VALUE frame = Qnil;
  std::string failure;
  int state = 0;
  {
    memprof::ruby::FrameReader reader(NUM2INT(fd), NUM2SIZET(max_bytes));
    state = read_frame_between_interrupts(reader);
    if (state == 0) {
      if (reader.complete())
        frame = rb_str_new(reader.payload().data(), static_cast<long>(reader.payload().size()));
      else if (reader.too_big())
        failure = "request of " + std::to_string(reader.announced_bytes()) + " bytes is too big";
      else if (reader.error() != 0)
        failure = std::string("reading a request: ") + std::strerror(reader.error());
    }
  }
  if (state != 0) rb_jump_tag(state);
  if (!failure.empty()) rb_raise(g_error_class, "%s", failure.c_str());
  return frame;
}

// The elements of a Ruby Array.
std::vector<VALUE> values_of(VALUE array) {
  const VALUE* begin = RARRAY_CONST_PTR(array);
  return std::vector<VALUE>(begin, begin + RARRAY_LEN(array));
}

// The block, in the child: its String is the answer; an exception (the caller's block rescues
// its own) or anything else is a failure.
bool yield_in_child(void*, std::string* answer) {
  int state = 0;
  VALUE result = rb_protect([](VALUE) { return rb_yield_values(0); }, Qnil, &state);
  if (state != 0 || !RB_TYPE_P(result, T_STRING)) return false;
  answer->assign(RSTRING_PTR(result), static_cast<size_t>(RSTRING_LEN(result)));
  return true;
}

// Memprof.dump_all's child process (forked_child.h): runs the block in a child that holds only
// this thread (`changed`: the Ractor and Thread.list, whose references the dump shows as they
// were) and returns the String the block returned there, or nil when no child could be
// made (the caller does the work in this process); the child's pid is pushed onto `forked` as
// soon as it runs, for the caller's clean-up if it dies or is killed. Raises Memprof::Error when the child ended
// without answering, or when it was asleep for `stall_seconds` (nil: no limit) with no CPU time
// and no I/O (core/util/child_progress.h) and so was killed. The wait lets the app's other
// threads run, and an interrupt of it (Thread#raise, Ctrl-C) kills the child before it raises.
[[gnu::noinline]] VALUE in_child_process(VALUE changed_list, VALUE stall_seconds, VALUE forked,
                                         const void* app_frames_end) {
  constexpr size_t kMostAnswerBytes = size_t{64} << 20;
  // (lib/memprof.rb lets only positive finite numbers through; a year is as good as forever, and
  // anything shorter than a millisecond is one.)
  const double seconds = NIL_P(stall_seconds) ? 0 : std::min(NUM2DBL(stall_seconds), 3.2e7);
  const auto stall_limit =
      std::chrono::milliseconds(NIL_P(stall_seconds) ? 0 : std::max<int64_t>(1, static_cast<int64_t>(seconds * 1000)));
  VALUE answer = Qnil;
  std::string failure;
  int state = 0;
  {
    // The slot is made before the fork: once there is a child, nothing may raise before the wait.
    rb_ary_push(forked, Qnil);
    const long slot = RARRAY_LEN(forked) - 1;
    auto child = memprof::ruby::fork_child(values_of(changed_list), app_frames_end, yield_in_child, nullptr);
    if (!child.ok()) return Qnil;
    RARRAY_ASET(forked, slot, PIDT2NUM(child->pid));
    memprof::StallWatch watch(stall_limit);
    std::string stall;
    auto keep_waiting = [&] {
      auto progress = memprof::read_child_progress(child->pid);
      if (!progress || !watch.stalled(*progress, std::chrono::steady_clock::now())) return true;
      stall = watch.describe(*progress);
      return false;
    };
    memprof::ruby::FrameReader reader(child->answer.get(), kMostAnswerBytes);
    const int tick_ms = static_cast<int>(std::clamp<int64_t>(stall_limit.count() / 4, 10, 1000));
    state = stall_limit.count() > 0 ? read_frame_between_interrupts(reader, tick_ms, keep_waiting)
                                    : read_frame_between_interrupts(reader);
    if (state != 0 || !stall.empty()) {
      memprof::kill_and_reap(child->pid);
      if (!stall.empty()) failure = fmt::format("child process {} {} and was killed", child->pid, stall);
    } else {
      // It closed its pipe: it is ending.
      std::string end = memprof::ruby::wait_for_end(child->pid);
      if (reader.complete())
        answer = rb_str_new(reader.payload().data(), static_cast<long>(reader.payload().size()));
      else
        failure = fmt::format("child process {} {} before it answered", child->pid, end);
    }
  }
  if (state != 0) rb_jump_tag(state);
  if (!failure.empty()) rb_raise(g_error_class, "%s", failure.c_str());
  return answer;
}

// The frames below this one are memprof's: the child's roots leave out what only they hold
// (ruby/heap_at_fork.h). Every callee-saved register of the caller is saved in this frame.
VALUE native_in_child_process(VALUE, VALUE changed_list, VALUE stall_seconds, VALUE forked) {
  __builtin_unwind_init();
  Check_Type(forked, T_ARRAY);
  return in_child_process(changed_list, stall_seconds, forked,
                          reinterpret_cast<const void*>(memprof::util::stack_pointer()));
}

VALUE native_tracked_objects(VALUE) {
  return guarded([](Tracker& t) -> Result<VALUE> {
    MEMPROF_TRY(objects, memprof::ruby::tracked_objects(t));
    VALUE out = rb_ary_new_capa(static_cast<long>(objects.size()));
    for (VALUE object : objects) rb_ary_push(out, object);
    return out;
  });
}

VALUE native_set_reset_on_fork(VALUE, VALUE reset) {
  Tracker::instance().set_reset_on_fork(RTEST(reset));
  return reset;
}

VALUE native_site_of(VALUE, VALUE object) {
  return guarded([&](Tracker& t) -> Result<VALUE> {
    auto site = memprof::ruby::site_of(t, object);
    if (!site) return Qnil;
    return rb_assoc_new(to_ruby(site->file), INT2NUM(site->line));
  });
}

VALUE native_annotate_object_line(VALUE, VALUE object, VALUE line) {
  return guarded([&](Tracker& t) -> Result<VALUE> {
    std::string text(RSTRING_PTR(line), RSTRING_LEN(line));
    return to_ruby(memprof::ruby::annotate_object_line(t, object, text));
  });
}

VALUE native_annotate_dump_file(VALUE, VALUE raw_path, VALUE path, VALUE last_gc) {
  return guarded([&](Tracker& t) -> Result<VALUE> {
    MEMPROF_TRY(counts, memprof::ruby::annotate_dump_file(t, StringValueCStr(raw_path),
                                                          StringValueCStr(path),
                                                          static_cast<uint32_t>(NUM2ULL(last_gc))));
    return ULL2NUM(counts.annotated);
  });
}

VALUE native_own_objects_begin(VALUE) {
  memprof::ruby::DumpOwnObjects::instance().begin();
  return Qnil;
}

VALUE native_own_objects_end(VALUE) {
  memprof::ruby::DumpOwnObjects::instance().end();
  return Qnil;
}

VALUE native_compaction_window_begin(VALUE) {
  Tracker::instance().begin_compaction_window();
  return Qnil;
}

VALUE native_compaction_window_end(VALUE) {
  Tracker::instance().end_compaction_window();
  memprof::ruby::DumpOwnObjects::instance().compacted();
  return Qnil;
}

VALUE native_set_auto_compaction(VALUE, VALUE on) {
  Tracker::instance().set_auto_compaction(RTEST(on));
  return on;
}

VALUE native_info(VALUE) {
  return guarded([](Tracker& t) -> Result<VALUE> {
    VALUE info = rb_hash_new();
    auto set = [&](const char* key, VALUE value) { rb_hash_aset(info, ID2SYM(rb_intern(key)), value); };
    // Read under the tracker's lock, handed to Ruby after it.
    auto counters = t.with_tables([](const memprof::track::LiveTable& table,
                                     const memprof::track::SiteTable& sites) {
      return std::array<size_t, 5>{table.size(), table.memory_bytes(), sites.size(),
                                   sites.memory_bytes(), table.dropped()};
    });
    set("entries", SIZET2NUM(counters[0]));
    set("table_bytes", SIZET2NUM(counters[1]));
    set("sites", SIZET2NUM(counters[2]));
    set("site_bytes", SIZET2NUM(counters[3]));
    set("dropped", SIZET2NUM(counters[4]));
    set("hooked_slots", SIZET2NUM(t.hooked_slots()));
    set("hooked_call_sites", SIZET2NUM(t.hooked_call_sites()));
    set("mechanism", t.active() ? ID2SYM(rb_intern(memprof::ruby::mechanism_name(t.mechanism()))) : Qnil);
    set("fallback_reason", t.fallback_reason().empty() ? Qnil : to_ruby(t.fallback_reason()));
    set("lost_to_compaction", SIZET2NUM(t.lost_to_compaction()));
    return info;
  });
}

VALUE native_ignore_path_prefix(VALUE, VALUE prefix) {
  memprof::ruby::ignore_path_prefix(StringValueCStr(prefix));
  return Qnil;
}

// The coverage audit in progress (Native.coverage_begin/_end, used by
// tests/ruby/robustness_test.rb); one at a time.
std::unique_ptr<memprof::ruby::CoverageAudit> g_audit;

VALUE native_coverage_begin(VALUE, VALUE capacity) {
  return guarded([&](Tracker& t) -> Result<VALUE> {
    if (g_audit) return memprof::err("a coverage audit is already running");
    MEMPROF_TRY(audit, memprof::ruby::CoverageAudit::begin(t, NUM2SIZET(capacity)));
    g_audit = std::move(audit);
    return Qnil;
  });
}

VALUE native_coverage_end(VALUE) {
  return guarded([](Tracker&) -> Result<VALUE> {
    if (!g_audit) return memprof::err("no coverage audit is running");
    auto audit = std::move(g_audit);
    MEMPROF_TRY(coverage, audit->finish());
    VALUE out = rb_ary_new();
    for (const auto& c : coverage)
      rb_ary_push(out, rb_ary_new_from_args(3, INT2NUM(c.type), ULL2NUM(c.events),
                                            ULL2NUM(c.hooked)));
    return out;
  });
}

}  // namespace

// The Ruby this extension was compiled for, "MAJOR.MINOR": `memprof attach` reads it from the
// file to pick the extension that matches the target process (src/attach/installation.h).
#define MEMPROF_STRINGIFY2(x) #x
#define MEMPROF_STRINGIFY(x) MEMPROF_STRINGIFY2(x)
extern "C" __attribute__((visibility("default"))) const char memprof_ruby_abi[] =
    MEMPROF_STRINGIFY(RUBY_API_VERSION_MAJOR) "." MEMPROF_STRINGIFY(RUBY_API_VERSION_MINOR);

// For the attach agent's postponed jobs (src/agent/ruby_runtime.cc), which find it with dlsym:
// what a job allocates on the Ruby thread it interrupts is not the app's. Returns the previous
// state.
extern "C" __attribute__((visibility("default"))) int memprof_set_thread_paused(int paused) {
  return Tracker::set_this_thread_paused(paused != 0) ? 1 : 0;
}

// For the attach agent's hello (src/agent/request_handler.cc), which finds it with dlsym:
// whether the tracker records allocations now. An atomic read: the agent's thread asks without
// the GVL.
extern "C" __attribute__((visibility("default"))) int memprof_tracking() noexcept {
  return Tracker::instance().active() ? 1 : 0;
}

// For the attach agent's forks (src/agent/ruby_calls.cc), which find it with dlsym: opened
// (1) in the parent before it forks the child that writes a dump, abandoned (0) in the parent
// after the fork; the child keeps it open (ruby/dump_own_objects.h).
extern "C" __attribute__((visibility("default"))) void memprof_dump_window(int open) noexcept {
  try {
    if (open != 0) {
      memprof::ruby::DumpOwnObjects::instance().begin();
    } else {
      memprof::ruby::DumpOwnObjects::instance().abandon();
    }
  } catch (const std::bad_alloc&) {
    // Out of memory: the dump is written without memprof's own objects marked.
  }
}

// For the attach agent's forks too: called in the child that writes a dump right after fork(2),
// in place of rb_thread_atfork, with the Ractor and Thread.list as the parent had them and the
// lowest address of the frames the agent's job interrupted (ruby/forked_child.h).
// Out of memory in the child: it goes on as a plain fork's child would (the exception must
// not reach the agent's job, nor Ruby's frames).
extern "C" __attribute__((visibility("default"))) void memprof_forked_for_dump_above(VALUE changed,
                                                                                    const void* app_frames_end) noexcept {
  try {
    memprof::ruby::prepare_dump_child(values_of(changed), app_frames_end);
  } catch (const std::bad_alloc&) {
  }
}

// The same for agents of earlier versions, which do not say where the app's frames end.
extern "C" __attribute__((visibility("default"))) void memprof_forked_for_dump(VALUE changed) noexcept {
  memprof_forked_for_dump_above(changed, nullptr);
}

extern "C" __attribute__((visibility("default"))) void Init_memprof() {
  VALUE memprof = rb_define_module("Memprof");
  g_error_class = rb_const_get(memprof, rb_intern("Error"));
  rb_gc_register_mark_object(g_error_class);
  VALUE native = rb_define_module_under(memprof, "Native");
  memprof::ruby::install_compaction_watcher(Tracker::instance());

  rb_define_module_function(native, "start", MEMPROF_ENTRY(native_start), 1);
  rb_define_module_function(native, "stop", MEMPROF_ENTRY(native_stop), 0);
  rb_define_module_function(native, "active?", MEMPROF_ENTRY(native_active_p), 0);
  rb_define_module_function(native, "mechanism", MEMPROF_ENTRY(native_mechanism), 0);
  rb_define_module_function(native, "stats_lines", MEMPROF_ENTRY(native_stats_lines), 0);
  rb_define_module_function(native, "live_groups", MEMPROF_ENTRY(native_live_groups), 0);
  rb_define_module_function(native, "ignore_this_thread", MEMPROF_ENTRY(native_ignore_this_thread), 0);
  rb_define_module_function(native, "getpid", MEMPROF_ENTRY(native_getpid), 0);
  rb_define_module_function(native, "clear", MEMPROF_ENTRY(native_clear), 0);
  rb_define_module_function(native, "prune", MEMPROF_ENTRY(native_prune), 0);
  rb_define_module_function(native, "report", MEMPROF_ENTRY(on_zeroed_stack<report_block>), 0);
  rb_define_module_function(native, "tracked_objects", MEMPROF_ENTRY(native_tracked_objects), 0);
  rb_define_module_function(native, "read_frame", MEMPROF_ENTRY(native_read_frame), 2);
  rb_define_module_function(native, "in_child_process", MEMPROF_ENTRY(native_in_child_process), 3);
  rb_define_module_function(native, "window_begin", MEMPROF_ENTRY(native_window_begin), 0);
  rb_define_module_function(native, "window_end", MEMPROF_ENTRY(on_zeroed_stack<end_window>), 0);
  rb_define_module_function(native, "reset_on_fork=", MEMPROF_ENTRY(native_set_reset_on_fork), 1);
  rb_define_module_function(native, "site_of", MEMPROF_ENTRY(native_site_of), 1);
  rb_define_module_function(native, "annotate_object_line", MEMPROF_ENTRY(native_annotate_object_line), 2);
  rb_define_module_function(native, "annotate_dump_file", MEMPROF_ENTRY(native_annotate_dump_file), 3);
  rb_define_module_function(native, "own_objects_begin", MEMPROF_ENTRY(native_own_objects_begin), 0);
  rb_define_module_function(native, "own_objects_end", MEMPROF_ENTRY(native_own_objects_end), 0);
  rb_define_module_function(native, "compaction_window_begin", MEMPROF_ENTRY(native_compaction_window_begin), 0);
  rb_define_module_function(native, "compaction_window_end", MEMPROF_ENTRY(native_compaction_window_end), 0);
  rb_define_module_function(native, "auto_compaction=", MEMPROF_ENTRY(native_set_auto_compaction), 1);
  rb_define_module_function(native, "info", MEMPROF_ENTRY(native_info), 0);
  rb_define_module_function(native, "ignore_path_prefix", MEMPROF_ENTRY(native_ignore_path_prefix), 1);
  rb_define_module_function(native, "coverage_begin", MEMPROF_ENTRY(native_coverage_begin), 1);
  rb_define_module_function(native, "coverage_end", MEMPROF_ENTRY(native_coverage_end), 0);
}
