// The process a recording command (memprof trace, memprof native) works on: a running PID,
// reached through its agent (injected if needed), or a command it starts with the agent
// preloaded and held before its first instruction until the recording has started. Either can
// end while it is recorded; this says when it has.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attach/agent_client.h"
#include "attach/launched_command.h"
#include "attach/program_identity.h"
#include "core/util/result.h"

namespace memprof::attach {

// /tmp/memprof-UID/PID.follow holding this CLI's pid, while it exists (src/agent/protocol.h).
class FollowMarker {
 public:
  FollowMarker() = default;
  static FollowMarker create(pid_t pid);
  FollowMarker(FollowMarker&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  FollowMarker& operator=(FollowMarker&& other) noexcept;
  ~FollowMarker() { remove(); }
  void remove();

 private:
  std::string path_;  // empty: none
};

class RecordedProcess {
 public:
  // `pid` (non-zero) or `command` (non-empty), one of the two.
  static Result<RecordedProcess> open(pid_t pid, const std::vector<std::string>& command);

  pid_t pid() const { return pid_; }
  bool launched() const { return launched_.has_value(); }
  // Whether it has ended: no such process, or a zombie not reaped yet.
  bool gone() const;
  // Whether it ends within `time` (checked every 10 ms).
  bool ends_within(std::chrono::milliseconds time) const;
  // After a request failed: whether that was the process ending (its agent goes with it). An
  // agent that still answers gave an error. A process may hold its agent's listening socket a
  // little while after the connection closed, so this waits up to 1 s for the end (10 s for a
  // launched command, whose teardown follows its agent's end and which is waited for anyway).
  bool ended_after_failure() const;
  // After a request failed and the process did not end: whether it replaced its program (exec)
  // since it was opened. Its agent and the recording went with the old program. Told by the
  // auxiliary vector the kernel gives each new program (AT_RANDOM: an address on a new stack),
  // once written in full; false when it cannot be read.
  bool replaced_program() const;
  // After replaced_program(): makes the new program the one recorded, once its agent listens.
  // A launched command passes the agent on to what it execs (LD_PRELOAD, and the hold that keeps
  // the new program's first instruction until the recording starts again), so a wrapper script
  // (an rbenv or pyenv shim, `sh -c`, `bundle exec`) is followed into the program it runs. An
  // error says why the new program cannot be recorded (a PID memprof did not start, a static or
  // privileged program, LD_PRELOAD cleared, no agent within 10 s).
  Status follow_new_program();
  // The recording ends (stopped, or it cannot follow an exec): a program the process execs
  // from now on runs without waiting for it.
  void stop_following() { follow_marker_.remove(); }
  // A launched command: reaped, "memprof: process N exited with status S" said, and S (as a
  // shell reports it) returned. Else 0.
  int wait();
  // A launched command: waits for its end and reaps it, saying nothing yet (wait() says it).
  // What it writes as it exits (stdio's buffers) then comes before the report.
  void wait_for_end() {
    if (launched_) (void)launched_->wait();
  }
  // A launched command that runs on once the recording has stopped (--duration, Ctrl-C it may
  // ignore, a failed write): says why memprof does not return yet, "memprof: WHY; waiting for
  // process N to end, whose exit status is memprof's".
  void say_waiting_for_end(std::string_view why) const;
  // A launched command that cannot be recorded: killed and reaped.
  void abandon();

 private:
  explicit RecordedProcess(pid_t pid);
  pid_t pid_;
  ProgramIdentity program_;       // the program recorded
  AgentSocketFile agent_socket_;  // its agent's socket file (launched commands)
  FollowMarker follow_marker_;    // launched commands, while they are followed through exec
  std::optional<LaunchedCommand> launched_;
};

// What a recording says when its process started child processes (the agent counts them,
// agent/child_processes.h): a child is recorded only by a command of its own, so a trace of a
// preforking server's master shows none of its workers' calls, and one of `sh -c` none of the
// commands it runs. "process 42 started 2 child processes (running now: 43, 44); `left_out`:
// memprof records one process, -p CHILD records a child".
std::string child_processes_notice(pid_t pid, uint64_t children, std::string_view left_out);

}  // namespace memprof::attach
