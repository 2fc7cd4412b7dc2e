#include "attach/recorded_process.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "attach/agent_client.h"
#include "agent/protocol.h"
#include "attach/attach_flow.h"
#include "attach/process_tree.h"
#include "core/proc/process_access.h"
#include "core/util/print_stderr.h"
#include "core/util/scoped_fd.h"

namespace memprof::attach {

FollowMarker FollowMarker::create(pid_t pid) {
  FollowMarker marker;
  std::string path = agent::follow_marker_path(::getuid(), pid);
  ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd.valid()) return marker;  // the command is then not followed through exec
  const std::string cli = agent::encode_follow_marker(::getpid());
  if (::write(fd.get(), cli.data(), cli.size()) == static_cast<ssize_t>(cli.size())) {
    marker.path_ = std::move(path);
  } else {
    ::unlink(path.c_str());
  }
  return marker;
}

FollowMarker& FollowMarker::operator=(FollowMarker&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

void FollowMarker::remove() {
  if (!path_.empty()) ::unlink(path_.c_str());
  path_.clear();
}

RecordedProcess::RecordedProcess(pid_t pid) : pid_(pid), program_(read_program(pid)) {}

Result<RecordedProcess> RecordedProcess::open(pid_t pid, const std::vector<std::string>& command) {
  if ((pid != 0) == !command.empty())
    return err("record a running process (-p PID) or a command (-- CMD ARGS), one of the two");
  if (command.empty()) {
    MEMPROF_TRY_STATUS(proc::check_process_exists(pid));  // worded as every -p command words it
    MEMPROF_TRY_STATUS(ensure_agent(pid));
    return RecordedProcess(pid);
  }
  // A recording of a program it cannot follow is refused before it runs (`memprof run`, which
  // only watches, runs such a program with a warning).
  if (!command.empty()) MEMPROF_TRY_STATUS(executable_preloadable(command[0]));
  MEMPROF_TRY(started, LaunchedCommand::start(command, {{agent::kTraceHoldVariable, "1"}}));
  RecordedProcess process(started.pid());
  process.launched_ = started;
  if (Status ready = started.wait_for_agent(); !ready.ok()) {
    process.abandon();
    return ready.error();
  }
  process.program_ = read_program(process.pid_);  // the command's, not memprof's before its exec
  process.agent_socket_ = agent_socket_file(process.pid_);
  process.follow_marker_ = FollowMarker::create(process.pid_);
  return process;
}

bool RecordedProcess::gone() const { return launched_ ? !launched_->running() : proc::process_gone(pid_); }

void RecordedProcess::say_waiting_for_end(std::string_view why) const {
  print_stderr("memprof: {}; waiting for process {} to end, whose exit status is memprof's\n", why, pid_);
}

bool RecordedProcess::ends_within(std::chrono::milliseconds time) const {
  for (auto waited = std::chrono::milliseconds(0);; waited += std::chrono::milliseconds(10)) {
    if (gone()) return true;
    if (waited >= time) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool RecordedProcess::ended_after_failure() const {
  if (gone()) return true;
  // A launched command is always waited for: a process ending with _exit() may still hold its
  // listening socket while it goes.
  if (!launched_ && agent_listening(pid_)) return false;
  // A launched program's agent closes its socket at the end of exit()'s wait for the last read
  // (2 s at most); Ruby's teardown comes after it, and took over 1 s on a loaded machine (a
  // `native -- ruby ...` run then failed with "no memprof agent"). It is waited for anyway.
  return ends_within(launched_ ? std::chrono::seconds(10) : std::chrono::seconds(1));
}

bool RecordedProcess::replaced_program() const {
  if (!program_.known()) return false;
  // The connection closes as exec begins; the new program's vector is there a moment later.
  for (int waited_ms = 0; waited_ms <= 200; waited_ms += 10) {
    if (gone()) return false;
    if (ProgramIdentity now = read_program(pid_); now.known() && !now.same_program(program_)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

Status RecordedProcess::follow_new_program() {
  program_ = read_program(pid_);
  for (int waited_ms = 0; !program_.known() && waited_ms < 200; waited_ms += 10) {
    if (gone()) return err("process {} ended", pid_);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    program_ = read_program(pid_);
  }
  if (!program_.known())
    return err("the new program cannot be read by this user (a program that gained privileges by setuid is closed "
               "to others)");
  if (!launched_) return err("only a command memprof starts passes its agent on to the program it execs");
  MEMPROF_TRY_STATUS(agent_preloadable(pid_, program_, launched_->preloaded_agent()));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (gone()) return err("process {} ended", pid_);
    // The new program's own agent: the old one's socket may still take a connection, which
    // would be reset when the last holder closes it.
    if (const AgentSocketFile socket = agent_socket_file(pid_);
        socket.inode != 0 && socket != agent_socket_ && agent_listening(pid_)) {
      agent_socket_ = socket;
      return ok_status();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return err("memprof's agent did not start in the new program within 10 s");
}

int RecordedProcess::wait() {
  stop_following();
  if (!launched_) return 0;
  int status = launched_->wait();
  print_stderr("memprof: process {} {}\n", pid_, launched_->ending());
  return status;
}

void RecordedProcess::abandon() {
  stop_following();
  if (!launched_) return;
  ::kill(pid_, SIGKILL);
  launched_->wait();
}

std::string child_processes_notice(pid_t pid, uint64_t children, std::string_view left_out) {
  std::vector<pid_t> running = process_tree(pid);
  running.erase(running.begin());  // pid itself
  // A child that has ended stays listed until its parent reaps it: it is not running.
  std::erase_if(running, [](pid_t child) { return proc::process_gone(child); });
  constexpr size_t kShown = 5;
  std::string listed;
  for (size_t i = 0; i < running.size() && i < kShown; ++i) listed += fmt::format("{}{}", i ? ", " : "", running[i]);
  if (running.size() > kShown) listed += fmt::format(" and {} more", running.size() - kShown);
  return fmt::format("process {} started {}{}; {}: memprof records one process, -p CHILD records a child", pid,
                     children == 1 ? "a child process" : fmt::format("{} child processes", children),
                     listed.empty() ? "" : fmt::format(" (running now: {})", listed), left_out);
}

}  // namespace memprof::attach
