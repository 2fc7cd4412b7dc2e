// A command memprof starts with its agent preloaded (memprof run, memprof trace -- CMD): the
// child gets LD_PRELOAD (the agent first, then what the user had) and any other variables the
// caller sets, and is watched and reaped by its pid.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "core/util/result.h"

namespace memprof::attach {

class LaunchedCommand {
 public:
  using Environment = std::vector<std::pair<std::string, std::string>>;

  // Forks and execs `command` with the agent in LD_PRELOAD and `environment` set; a command that
  // cannot be executed is an error ("cannot run CMD: No such file or directory").
  static Result<LaunchedCommand> start(const std::vector<std::string>& command, const Environment& environment = {});

  pid_t pid() const { return pid_; }
  // The agent given in LD_PRELOAD.
  const std::string& preloaded_agent() const { return agent_library_; }
  // Whether it still runs (a zombie does not), without reaping it.
  bool running() const;
  // Waits until its agent answers (at most 10 s): an error when it ended first, never did, or
  // runs a program the agent cannot be preloaded into (said at once: a static program).
  Status wait_for_agent() const;
  // Reaps it (once; later calls return the same): its exit status as a shell reports it (128 + N
  // for signal N).
  int wait();
  // After wait(): "exited with status 3", "was killed by SIGTERM".
  std::string ending() const;

 private:
  LaunchedCommand(pid_t pid, std::string agent_library) : pid_(pid), agent_library_(std::move(agent_library)) {}
  pid_t pid_;
  std::string agent_library_;
  int wait_status_ = 0;
  bool reaped_ = false;
};

// VALUE, then the variable's current value after `separator` when it has one.
std::string prepended_to(const char* variable, const std::string& value, const char* separator);

}  // namespace memprof::attach
