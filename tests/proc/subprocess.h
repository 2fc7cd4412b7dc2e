// Child processes for tests: run a command to completion, or keep one running as a target.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace memprof::testing {

struct CommandResult {
  int exit_code = -1;  // -1 when killed by a signal
  std::string out;
  std::string err;
};

// Runs argv[0] (looked up in PATH) and collects its output.
CommandResult run_command(const std::vector<std::string>& argv);

// A running child with a pipe to its stdin and one from its stdout. The destructor kills it
// (SIGKILL) and reaps it, so a failing test never leaves a process behind.
class ChildProcess {
 public:
  explicit ChildProcess(const std::vector<std::string>& argv);
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  bool started() const { return pid_ > 0; }
  // Writes to the child's stdin; false when it could not take all the bytes.
  bool write_stdin(std::string_view bytes);
  // The next line of the child's stdout without the newline; empty at EOF.
  std::string read_line();
  // The same, but empty as well when no full line comes within `timeout_ms` (a hung child).
  std::string read_line_within(int timeout_ms);
  // Kills and reaps the child now; afterwards its PID names no process (until reused).
  void kill_and_wait();

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::string buffered_;
};

}  // namespace memprof::testing
