#include "inject/target.h"

#include <elf.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace memprof::testing {

namespace {

template <typename Predicate>
bool poll_until(Predicate done) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

InjectTarget::InjectTarget(const std::string& mode, const std::string& executable)
    : mode_(mode), child_({executable, mode}) {
  EXPECT_EQ(line(), "ready") << "the fixture " << executable << " " << mode << " did not start";
}

int InjectTarget::reported(const std::string& what) {
  std::string text = line();
  int count = -1;
  if (std::sscanf(text.c_str(), (what + " %d").c_str(), &count) != 1) {
    ADD_FAILURE() << "expected \"" << what << " N\", got \"" << text << "\"";
  }
  return count;
}

int InjectTarget::injections_reported() {
  if (mode_ == "malloc") {
    child_.write_stdin("count\n");
  } else {
    signals_ = reported("signals");
  }
  return reported("injections");
}

char process_state(pid_t pid) {
  std::string stat = read_text(fmt::format("/proc/{}/stat", pid));
  size_t paren = stat.rfind(')');  // the command name may hold anything
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

bool wait_for_state(pid_t pid, char state) {
  return poll_until([&] { return process_state(pid) == state; });
}

bool wait_for_syscall(pid_t pid, pid_t tid, long number) {
  std::string path = fmt::format("/proc/{}/task/{}/syscall", pid, tid);
  return poll_until([&] {
    long current = -1;
    return std::sscanf(read_text(path).c_str(), "%ld", &current) == 1 && current == number &&
           process_state(pid) == 'S';
  });
}

uint64_t blocked_signals(pid_t pid) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("SigBlk:")) return std::stoull(line.substr(7), nullptr, 16);
  }
  ADD_FAILURE() << "no SigBlk in /proc/" << pid << "/status";
  return 0;
}

ThreadSnapshot snapshot_blocked_thread(pid_t tid, size_t stack_bytes) {
  ThreadSnapshot snapshot;
  EXPECT_EQ(::ptrace(PTRACE_SEIZE, tid, nullptr, nullptr), 0);
  EXPECT_EQ(::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr), 0);
  int status = 0;
  EXPECT_EQ(::waitpid(tid, &status, __WALL), tid);
  EXPECT_EQ(::ptrace(PTRACE_GETREGS, tid, nullptr, &snapshot.regs), 0);
  EXPECT_EQ(::ptrace(PTRACE_GETFPREGS, tid, nullptr, &snapshot.fpregs), 0);
  snapshot.xsave.resize(64 * 1024);
  iovec xsave{snapshot.xsave.data(), snapshot.xsave.size()};
  EXPECT_EQ(::ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(NT_X86_XSTATE), &xsave), 0);
  snapshot.xsave.resize(xsave.iov_len);
  snapshot.stack.resize(stack_bytes);
  iovec local{snapshot.stack.data(), stack_bytes};
  iovec remote{reinterpret_cast<void*>(snapshot.regs.rsp - stack_bytes), stack_bytes};
  EXPECT_EQ(::process_vm_readv(tid, &local, 1, &remote, 1, 0),
            static_cast<ssize_t>(stack_bytes));
  EXPECT_EQ(::ptrace(PTRACE_DETACH, tid, nullptr, nullptr), 0);
  return snapshot;
}

}  // namespace memprof::testing
