#include "attach/recorded_process.h"

#include <elf.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "attach/agent_client.h"
#include "attach/attach_flow.h"
#include "core/proc/process_access.h"
#include "core/util/proc_file.h"

namespace memprof::attach {
namespace {

// The agent of a launched command holds its first instruction until a recording starts
// (src/agent/agent.cc).
constexpr const char* kHoldVariable = "MEMPROF_TRACE_HOLD";

std::string read_auxv(pid_t pid) {
  auto auxv = read_proc_file(fmt::format("/proc/{}/auxv", pid));
  return auxv.ok() ? std::move(*auxv) : std::string();
}

// AT_BASE of an auxiliary vector: where the program's interpreter (ld.so) is mapped, 0 for a
// statically linked program (or an unreadable vector).
uint64_t interpreter_base(const std::string& auxv) {
  for (size_t at = 0; at + 16 <= auxv.size(); at += 16) {
    uint64_t type = 0, value = 0;
    std::memcpy(&type, auxv.data() + at, 8);
    std::memcpy(&value, auxv.data() + at + 8, 8);
    if (type == AT_BASE) return value;
    if (type == AT_NULL) break;
  }
  return 0;
}

}  // namespace

RecordedProcess::RecordedProcess(pid_t pid) : pid_(pid), auxv_(read_auxv(pid)) {}

bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  const char state = proc::process_state(pid);
  return state == 'Z' || state == 'X' || state == '?';
}

Result<RecordedProcess> RecordedProcess::open(pid_t pid, const std::vector<std::string>& command) {
  if ((pid != 0) == !command.empty())
    return err("record a running process (-p PID) or a command (-- CMD ARGS), one of the two");
  if (command.empty()) {
    if (process_gone(pid)) return err("no process {}", pid);
    MEMPROF_TRY_STATUS(ensure_agent(pid));
    return RecordedProcess(pid);
  }
  MEMPROF_TRY(started, LaunchedCommand::start(command, {{kHoldVariable, "1"}}));
  RecordedProcess process(started.pid());
  process.launched_ = started;
  if (Status ready = started.wait_for_agent(); !ready.ok()) {
    process.abandon();
    return ready.error();
  }
  process.auxv_ = read_auxv(process.pid_);  // the command's, not memprof's before its exec
  return process;
}

bool RecordedProcess::gone() const { return launched_ ? !launched_->running() : process_gone(pid_); }

bool RecordedProcess::ended_after_failure() const {
  if (gone()) return true;
  // A launched command is always waited for: a process ending with _exit() may still hold its
  // listening socket while it goes.
  if (!launched_ && agent_listening(pid_)) return false;
  for (int waited_ms = 0; waited_ms < 1000; waited_ms += 10) {
    if (gone()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

bool RecordedProcess::replaced_program() const {
  if (auxv_.empty()) return false;
  // The connection closes as exec begins; the new program's vector is there a moment later.
  for (int waited_ms = 0; waited_ms <= 200; waited_ms += 10) {
    if (gone()) return false;
    if (std::string now = read_auxv(pid_); !now.empty() && now != auxv_) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

Status RecordedProcess::follow_new_program() {
  auxv_ = read_auxv(pid_);
  if (!launched_) return err("only a command memprof starts passes its agent on to the program it execs");
  if (interpreter_base(auxv_) == 0)
    return err("the new program is statically linked: memprof's agent cannot be preloaded into it");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (gone()) return err("process {} ended", pid_);
    if (agent_listening(pid_)) return ok_status();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return err("memprof's agent did not start in the new program within 10 s (a program that clears LD_PRELOAD "
             "or gains privileges by setuid does not load it)");
}

int RecordedProcess::wait() {
  if (!launched_) return 0;
  int status = launched_->wait();
  fmt::print(stderr, "memprof: process {} exited with status {}\n", pid_, status);
  return status;
}

void RecordedProcess::abandon() {
  if (!launched_) return;
  ::kill(pid_, SIGKILL);
  launched_->wait();
}

}  // namespace memprof::attach
