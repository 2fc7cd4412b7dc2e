#include "agent/recording_sessions.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <utility>

#include "agent/child_processes.h"
#include "agent/request_handler.h"
#include "agent/ruby_calls.h"
#include "agent/ruby_caller.h"
#include "core/hook/hook_change.h"
#include "core/util/raw_sleep.h"
#include "native/native_wire.h"
#include "native/recording_window.h"
#include "tracer/process_hooks.h"
#include "tracer/trace_wire.h"
#include "tracer/trampoline.h"

namespace memprof::agent {

namespace {

// Installs a T (T::install()) into `slot` unless one is there; a failure is not the session's:
// it goes to `problems` as "`consequence` (why)".
template <typename T>
void install_once(std::unique_ptr<T>& slot, std::vector<std::string>& problems, std::string_view consequence) {
  if (slot != nullptr) return;
  auto installed = T::install();
  if (!installed.ok()) {
    problems.push_back(fmt::format("{} ({})", consequence, installed.message()));
    return;
  }
  slot = std::move(*installed);
}

std::atomic<bool> g_session_started{false};
std::atomic<bool> g_session_starting{false};
std::atomic<bool> g_launch_held{false};
std::atomic<bool> g_session_active{false};
std::atomic<bool> g_exiting{false};
// How long exit() waits for the CLI to collect the last results.
constexpr int kExitWaitMs = 2000;
// A trace readout carries at most this many records (~26 MB), the rest waits for the next read.
constexpr size_t kRecordsPerReadout = 65536;

void note_started() { g_session_active.store(true, std::memory_order_release); }

bool exiting() { return g_exiting.load(std::memory_order_acquire); }

}  // namespace

bool session_started() { return g_session_started.load(std::memory_order_acquire); }

bool session_starting() { return g_session_starting.load(std::memory_order_acquire); }

void note_launch_held(bool held) { g_launch_held.store(held, std::memory_order_release); }

void forget_sessions_in_child() {
  // Before: a child of a traced process (a shell's subshell, a forked worker) inherited "a
  // session is active" and waited 2 s in exit() for a CLI read that never came.
  g_session_active.store(false, std::memory_order_relaxed);
  g_exiting.store(false, std::memory_order_relaxed);
}

void count_fork_in_parent() {
  if (!forking_for_handler()) count_child_process();
}

void wait_for_sessions_at_exit() {
  // Once: exit() waits in its atexit handler, then ends through _exit (exit_watch.h), which
  // must not wait again for a CLI that did not answer.
  if (!g_session_active.load(std::memory_order_acquire) || g_exiting.exchange(true, std::memory_order_acq_rel))
    return;
  for (int waited = 0; waited < kExitWaitMs && g_session_active.load(std::memory_order_acquire); ++waited)
    sleep_without_libc(std::chrono::milliseconds(1));
}

Result<std::string> RecordingSessions::handle(const std::string& verb, const std::string& body) {
  if ((verb == "trace-start" || verb == "native-start") && hook::hooks_frozen()) return err("{}", hook::kFrozenHooks);
  auto now = std::chrono::steady_clock::now();
  if (verb.starts_with("trace-")) last_trace_read_ = now;
  if (verb.starts_with("native-")) last_native_read_ = now;
  // A held launch waits as long as a start takes (hooking thousands of functions takes
  // seconds), until after_reply.
  if (verb == "trace-start" || verb == "native-start") g_session_starting.store(true, std::memory_order_release);
  if (verb == "trace-start") return trace_start(body);
  if (verb == "trace-read") return trace_read();
  if (verb == "trace-stop") return trace_stop();
  if (verb == "native-start") return native_start(body);
  if (verb == "native-read") return native_read(body);
  if (verb == "native-gc") return native_gc();
  if (verb == "native-stop") return native_stop();
  return err("unknown request '{}'", verb);
}

void RecordingSessions::end_all() {
  hook::HookChange change;
  end_trace();
  end_native();
}

void RecordingSessions::end_abandoned() {
  auto now = std::chrono::steady_clock::now();
  const bool trace_abandoned = trace_ != nullptr && now - last_trace_read_ >= kAbandonedAfter;
  const bool native_abandoned = native_ != nullptr && now - last_native_read_ >= kAbandonedAfter;
  if (trace_abandoned || native_abandoned) {
    hook::HookChange change;
    if (trace_abandoned) end_trace();
    if (native_abandoned) end_native();
  }
  after_reply();
}

// After every reply, reads included: no HookChange (see trace_read), only atomic flags.
void RecordingSessions::after_reply() {
  if (std::exchange(release_exec_after_reply_, false)) release_waiting_exec();
  if (!active()) g_session_active.store(false, std::memory_order_release);
  // A held launch goes on only once the start's reply is out: a command that aborts at once
  // (native's "abort" fixture) used to die before the reply left, on a loaded machine.
  else g_session_started.store(true, std::memory_order_release);
  g_session_starting.store(false, std::memory_order_release);
}

Result<std::string> RecordingSessions::trace_start(const std::string& body) {
  hook::HookChange change;
  MEMPROF_TRY(request, tracer::decode_trace_request(body));
  children_at_trace_start_ = child_processes();
  // A launched command held at its first instruction: its Ruby, if it has one, has not started
  // yet; a program without one (a wrapper script it runs first: an rbenv shim, sh -c) leaves
  // ruby:gc and Ruby lines to the program it execs, and the CLI says at the end when none had.
  const bool launched = g_launch_held.load(std::memory_order_acquire);
  bool ruby_gc = false;
  for (const std::string& pattern : request.patterns) {
    if (!tracer::is_event_pattern(pattern)) continue;
    if (pattern != "ruby:gc") return err("unknown event '{}' (memprof traces ruby:gc)", pattern);
    if (ruby_ == nullptr && launched) continue;
    if (ruby_ == nullptr || !(ruby_->vm_ready() || launched))
      return err("ruby:gc: {}", kNoSupportedRuby);
    ruby_gc = true;
  }
  if (request.ruby_caller && ruby_ == nullptr && launched) request.ruby_caller = false;
  if (request.ruby_caller && (ruby_ == nullptr || !find_ruby_caller_api()))
    return err("--ruby-caller: {}", kNoSupportedRuby);
  // Ruby lines must not be read, nor jobs posted (ruby:gc's disabling), once the VM has ended.
  if (request.ruby_caller || ruby_gc) MEMPROF_TRY_STATUS(watch_vm_end());
  tracer::set_caller_source(request.ruby_caller ? &ruby_caller : nullptr);
  // The exec and exit watches before the trace's hooks: a trace of execve or _exit itself (`-x
  // '*'`) then sees it through the GOT, and an exec still waits for the last reads (the other
  // way round, the trace's entry hook left the watch out).
  std::vector<std::string> problems;
  if (request.ruby_caller) record_blocking_region_lines(problems);
  watch_program_end(problems);
  auto session = tracer::TraceSession::start(std::move(request));
  if (!session.ok()) {
    tracer::set_caller_source(nullptr);
    drop_unused_vm_end_watch();
    drop_unused_program_end_watches();
    return err("{}", session.message());
  }
  trace_ = std::move(*session);
  if (ruby_gc) {
    // A failure here ends the trace just started (and with it its hooks).
    auto source = trace_->add_event_source("ruby:gc");
    if (!source.ok()) {
      end_trace();
      return err("{}", source.message());
    }
    auto events = ruby_->vm_ready() ? RubyGcEvents::enable(*ruby_, *source)
                                    : RubyGcEvents::enable_when_ruby_starts(*ruby_, *source);
    if (!events.ok()) {
      end_trace();
      return err("{}", events.message());
    }
    gc_events_ = std::move(*events);
  }
  note_started();
  tracer::TraceReadout readout = read_trace(0);
  readout.problems.insert(readout.problems.end(), problems.begin(), problems.end());
  // With the functions a dlopen hooked since the session started: this read took them, and a
  // function never announced is never shown (a library loaded in a loop, back at the same
  // address each time, was traced with every call dropped).
  std::vector<tracer::HookedFunction> functions = trace_->initial_functions();
  functions.insert(functions.end(), readout.new_functions.begin(), readout.new_functions.end());
  return tracer::encode_readout(readout, functions, trace_->totals(), tracer::calls_in_flight());
}

// Reads change no hook: they take no HookChange of their own (TraceSession::read and totals
// take one around the session's lock). A read every 10 ms inside one froze a worker forked
// during it (hook_change.h): 3 of 120 forks right after a trace started could not be traced.
Result<std::string> RecordingSessions::trace_read() {
  if (trace_ == nullptr) return err("not being traced");
  follow_ruby_scheduler();
  const bool exec = read_with_exec_release();
  tracer::TraceReadout readout = read_trace(kRecordsPerReadout);
  readout.process_exiting = exiting();
  readout.exec_waiting = exec;
  // An exec that succeeds ends every call in flight, its own execve first: the CLI shows them
  // as unfinished once it sees the new program.
  if (exec) append_unfinished_calls(readout);
  note_ruby_gc_stop(readout);
  return tracer::encode_readout(readout, readout.new_functions, trace_->totals(), tracer::calls_in_flight());
}

Result<std::string> RecordingSessions::trace_stop() {
  hook::HookChange change;
  if (trace_ == nullptr) return err("not being traced");
  (void)read_with_exec_release();
  tracer::TraceReadout readout = read_trace(kRecordsPerReadout);
  note_ruby_gc_stop(readout);
  append_unfinished_calls(readout);
  auto totals = trace_->totals();
  end_trace();
  return tracer::encode_readout(readout, readout.new_functions, totals, tracer::calls_in_flight());
}

tracer::TraceReadout RecordingSessions::read_trace(size_t max_records) {
  tracer::TraceReadout readout = trace_->read(max_records);
  readout.children = child_processes() - children_at_trace_start_;
  return readout;
}

void RecordingSessions::append_unfinished_calls(tracer::TraceReadout& readout) const {
  std::vector<trace::CallRecord> unfinished = trace_->unfinished_calls();
  readout.records.insert(readout.records.end(), unfinished.begin(), unfinished.end());
}

void RecordingSessions::note_ruby_gc_stop(tracer::TraceReadout& readout) {
  if (gc_events_ != nullptr && gc_events_->stopped_for_ractor())
    readout.problems.push_back(fmt::format("ruby:gc stopped: a Ractor started, and Ruby {} crashes when one starts "
                                           "while a GC event hook is on (Ruby bug #18464, fixed in 3.3)",
                                           ruby_->version()));
}

void RecordingSessions::end_trace() {
  tracer::set_caller_source(nullptr);
  gc_events_.reset();
  trace_.reset();
  drop_unused_vm_end_watch();
  drop_unused_program_end_watches();
}

// Posted while the VM's end is watched (a session without Ruby lines holds no watch of its
// own): a job is never posted to a VM that has ended.
Result<std::string> RecordingSessions::native_gc() {
  if (native_ == nullptr) return err("no memprof native session in this process");
  if (ruby_ == nullptr) return std::string(R"({"ruby":false})");  // nothing to collect
  if (!ruby_->vm_ready()) return err("Ruby's VM has not started yet");
  {
    hook::HookChange change;
    MEMPROF_TRY_STATUS(watch_vm_end());
  }
  return ruby_->run(
      [](const RubyApi& api) {
        // What the job allocates on the app's thread (the collection's mark stack, the reply) is
        // memprof's doing, not the app's; the frees of the app's blocks are counted as ever.
        native::ScopedInternal internal;
        return collect_garbage(api);
      },
      kRubyTimeout);
}

void RecordingSessions::arrange_collection_at_exit() {
  if (!collect_at_exit_ || collection_at_exit_arranged_ || ruby_ == nullptr || vm_end_watch_ == nullptr ||
      !ruby_->vm_ready() || exiting())
    return;
  collection_at_exit_arranged_ = true;
  // Without it (a Ruby busy in C code past the wait), the CLI says that nothing was collected.
  (void)ruby_->run(
      [](const RubyApi& api) -> Result<std::string> {
        native::ScopedInternal internal;  // the end proc's record is Ruby's block, made for memprof
        MEMPROF_TRY_STATUS(register_collection_at_exit(api));
        return std::string();
      },
      std::chrono::milliseconds(1000));
}

std::string RecordingSessions::native_snapshot_reply(const std::vector<std::string>& problems) const {
  return native::encode_snapshot(native_->snapshot(), problems, exiting(),
                                 collect_at_exit_ ? collection_at_exit_ms() : -1,
                                 child_processes() - children_at_native_start_);
}

void RecordingSessions::end_native() {
  set_collection_at_exit(false);
  native_.reset();
  drop_unused_vm_end_watch();
  drop_unused_program_end_watches();
}

void RecordingSessions::watch_program_end(std::vector<std::string>& problems) {
  install_once(exec_watch_, problems, "an exec will not wait for the last reads");
  install_once(exit_watch_, problems, "an _exit will not wait for the last reads");
}

void RecordingSessions::drop_unused_program_end_watches() {
  if (active()) return;
  exec_watch_.reset();
  exit_watch_.reset();
}

bool RecordingSessions::read_with_exec_release() {
  release_exec_after_reply_ = exec_waiting();
  return release_exec_after_reply_;
}

Status RecordingSessions::watch_vm_end() { return RubyVmEndWatch::hold(vm_end_watch_); }

void RecordingSessions::record_blocking_region_lines(std::vector<std::string>& problems) {
  install_once(blocking_region_lines_, problems, "calls made without the GVL have no Ruby line");
  follow_ruby_scheduler();
}

void RecordingSessions::follow_ruby_scheduler() {
  if (blocking_region_lines_ != nullptr && ruby_ != nullptr) blocking_region_lines_->follow_scheduler(ruby_->api());
}

void RecordingSessions::drop_unused_vm_end_watch() {
  if (trace_ != nullptr || native_ != nullptr) return;
  blocking_region_lines_.reset();
  vm_end_watch_.reset();
}

Result<std::string> RecordingSessions::native_start(const std::string& body) {
  hook::HookChange change;
  if (native_ != nullptr)
    return err("already tracked by another memprof native");
  MEMPROF_TRY(request, native::decode_native_request(body));
  children_at_native_start_ = child_processes();
  native::NativeOptions options;
  options.attribution.stack_depth = request.stack_depth;
  options.track_mmap = request.track_mmap;
  // Ruby lines where the process runs Ruby (a launched one from the moment its VM has booted).
  std::vector<std::string> problems;
  if (request.ruby_lines && ruby_ != nullptr && find_ruby_caller_api()) {
    if (Status watched = watch_vm_end(); watched.ok()) {
      options.attribution.ruby_location = &ruby_location;
      record_blocking_region_lines(problems);
    } else
      problems.push_back(fmt::format("no Ruby lines: {}", watched.message()));
  }
  auto session = native::NativeSession::start(options);
  if (!session.ok()) {
    drop_unused_vm_end_watch();
    return err("{}", session.message());
  }
  native_ = std::move(*session);
  note_started();
  problems.insert(problems.end(), native_->problems().begin(), native_->problems().end());
  watch_program_end(problems);
  collect_at_exit_ = request.gc_at_exit && options.attribution.ruby_location != nullptr;
  collection_at_exit_arranged_ = false;
  set_collection_at_exit(collect_at_exit_);  // arranged by the next read, outside the hook change
  return native_snapshot_reply(problems);
}

Result<std::string> RecordingSessions::native_read(const std::string& body) {
  if (native_ == nullptr) return err("not tracked by memprof native");
  // "wait_ms N": answer after N ms, or at once when the process starts exiting, so that a
  // process in exit() waits for the CLI's stop no longer than a reply takes.
  unsigned wait_ms = 0;
  if (body.starts_with("wait_ms ")) wait_ms = std::min<unsigned>(std::strtoul(body.c_str() + 8, nullptr, 10), 5000);
  // A launched Ruby boots while the CLI's first read waits: the collection at its end is
  // arranged as soon as its VM is up, not at the end of the wait (a short program is over by then).
  for (unsigned waited = 0; waited < wait_ms && !exiting() && !exec_waiting(); waited += 5) {
    arrange_collection_at_exit();
    follow_ruby_scheduler();
    sleep_without_libc(std::chrono::milliseconds(5));
  }
  arrange_collection_at_exit();
  follow_ruby_scheduler();
  // No HookChange, as trace_read: the snapshot reads lock-free tables.
  (void)read_with_exec_release();
  return native_snapshot_reply({});
}

Result<std::string> RecordingSessions::native_stop() {
  hook::HookChange change;
  if (native_ == nullptr) return err("not tracked by memprof native");
  (void)read_with_exec_release();
  std::string last = native_snapshot_reply({});
  end_native();
  return last;
}

}  // namespace memprof::agent
