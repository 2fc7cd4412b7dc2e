// The agent's recording sessions: `memprof trace` (src/tracer, verbs trace-start/read/stop,
// tracer/trace_wire.h) and `memprof native` (src/native, verbs native-start/read/gc/stop,
// native/native_wire.h), one of each at a time. Their CLI reads them every few milliseconds
// (trace) or every second (native); a session nobody has read for kAbandonedAfter (its CLI was
// killed) is ended, so that the process does not pay for hooks whose results nobody collects.
//
// At exit: while a session runs, exit() and _exit (exit_watch.h) wait (at most 2 s) until its
// CLI has collected the last results and stopped it (readouts say "exiting"); memprof
// trace/native -- CMD hold the
// program's first instruction until a session has started.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "agent/blocking_region_lines.h"
#include "agent/exec_watch.h"
#include "agent/exit_watch.h"
#include "agent/ruby_gc_events.h"
#include "agent/ruby_runtime.h"
#include "agent/ruby_vm_end_watch.h"
#include "core/util/result.h"
#include "native/native_session.h"
#include "tracer/trace_session.h"

namespace memprof::agent {

inline constexpr std::chrono::seconds kAbandonedAfter{10};
// The agent's replies do not name the process: the CLI puts "process PID: " before them.
inline constexpr const char* kNoSupportedRuby = "not running a supported Ruby";

// Sessions, their hooks and their watches change only inside a hook::HookChange (start, stop,
// each end; reads only around a session's lock): a fork in the middle of a change leaves a
// child that can neither trust nor end its copy of them (hook_change.h), so the changes are
// kept short and the reads out of them.
class RecordingSessions {
 public:
  // `ruby` is null in a process without (a supported) Ruby.
  explicit RecordingSessions(RubyRuntime* ruby) : ruby_(ruby) {}

  // Handles a trace-* or native-* verb.
  Result<std::string> handle(const std::string& verb, const std::string& body);
  bool active() const { return trace_ != nullptr || native_ != nullptr; }
  // Ends both (detach).
  void end_all();
  // Ends what nobody has read for kAbandonedAfter.
  void end_abandoned();
  // Called once a reply has been written: a process waiting in exit() for a session that has
  // ended may go on only now (its end would cut the reply short), and a launch held until a
  // session starts only now (the same).
  void after_reply();

 private:
  Result<std::string> trace_start(const std::string& body);
  Result<std::string> trace_read();
  Result<std::string> trace_stop();
  // The session's calls (at most `max_records`) and news since the last read.
  tracer::TraceReadout read_trace(size_t max_records);
  // Tells the CLI, once, that ruby:gc went off at a first Ractor.new (RubyGcEvents).
  void note_ruby_gc_stop(tracer::TraceReadout& readout);
  // The calls not returned (trace records only: -c has no lines), after the finished ones.
  void append_unfinished_calls(tracer::TraceReadout& readout) const;
  void end_trace();
  Result<std::string> native_start(const std::string& body);
  Result<std::string> native_read(const std::string& body);
  Result<std::string> native_stop();
  // A full collection in a Ruby process before the last readout (collect_garbage, ruby_calls.h).
  Result<std::string> native_gc();
  // The collection at a Ruby process's end (register_collection_at_exit, ruby_calls.h): by a job
  // once the VM runs and the VM's end is watched (a launched Ruby boots after the session's
  // start: a later read does it). Tried once per session.
  void arrange_collection_at_exit();
  // A snapshot for the CLI, with the collection at the end when one ran.
  std::string native_snapshot_reply(const std::vector<std::string>& problems) const;
  void end_native();
  // Ruby lines (ruby_caller.h) are read only while the VM's end is watched; the watch goes with
  // the last session, and so do the hooks that give calls made without the GVL their line
  // (blocking_region_lines.h; `problems` gets why when they cannot be installed).
  Status watch_vm_end();
  void record_blocking_region_lines(std::vector<std::string>& problems);
  // ... and, once Ruby's VM is up (a launched one boots after the start), through its scheduler.
  void follow_ruby_scheduler();
  void drop_unused_vm_end_watch();
  // While a session runs, an exec waits for the next read (exec_watch.h) and _exit for the
  // session's stop (exit_watch.h); `problems` gets why when they cannot be watched.
  void watch_program_end(std::vector<std::string>& problems);
  void drop_unused_program_end_watches();
  // What is read now for a reply: an exec that waits since before it goes on once it is out.
  bool read_with_exec_release();

  RubyRuntime* ruby_;
  std::shared_ptr<RubyVmEndWatch> vm_end_watch_;
  std::unique_ptr<BlockingRegionLines> blocking_region_lines_;
  std::unique_ptr<ExecWatch> exec_watch_;
  std::unique_ptr<ExitWatch> exit_watch_;
  bool release_exec_after_reply_ = false;
  std::unique_ptr<tracer::TraceSession> trace_;
  std::unique_ptr<RubyGcEvents> gc_events_;  // memprof trace -x ruby:gc
  std::unique_ptr<native::NativeSession> native_;
  bool collect_at_exit_ = false;             // the session asked for a collection at the end
  bool collection_at_exit_arranged_ = false;  // tried for this session
  std::chrono::steady_clock::time_point last_trace_read_;
  std::chrono::steady_clock::time_point last_native_read_;
  // child_processes() when each session started: its readouts count the children since.
  uint64_t children_at_trace_start_ = 0;
  uint64_t children_at_native_start_ = 0;
};

// Whether a session has been started in this process (held launches wait for it).
bool session_started();
// Whether a session's start is being handled now.
bool session_starting();
// While a launched program waits at its first instruction for its first session (agent.cc).
void note_launch_held(bool held);
// At exit (an atexit handler, and the exit watch): see above. Waits once.
void wait_for_sessions_at_exit();
// In a forked child: the parent's sessions are not the child's, and no CLI waits for its exit.
void forget_sessions_in_child();
// In the parent after a fork() (a pthread_atfork handler): counts the child (child_processes.h)
// unless the agent forked it.
void count_fork_in_parent();

}  // namespace memprof::agent
