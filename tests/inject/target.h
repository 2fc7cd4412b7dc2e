// The injector tests' target process (fixtures/inject_target.c) and ways to look at it from
// outside: its state letter, its current system call, and a ptrace snapshot of its main thread
// made independently of the injector.
#pragma once

#include <sys/types.h>
#include <sys/user.h>

#include <cstdint>
#include <string>
#include <vector>

#include "proc/subprocess.h"

namespace memprof::testing {

// The fixture in `mode`, started and past its "ready" line.
class InjectTarget {
 public:
  explicit InjectTarget(const std::string& mode, const std::string& executable = INJECT_TARGET);
  pid_t pid() const { return child_.pid(); }
  ChildProcess& child() { return child_; }
  // The next line of output, "" after 10 s of silence.
  std::string line() { return child_.read_line_within(10000); }
  // "injections N" -> N (asks first in malloc mode; reads "signals N" before in the others).
  int injections_reported();
  // The "signals N" read by injections_reported.
  int signals_reported() const { return signals_; }

 private:
  int reported(const std::string& what);

  std::string mode_;
  int signals_ = -1;
  ChildProcess child_;
};

// The state letter of /proc/PID/stat ('R', 'S', 'T', 'Z', ...), '?' when gone.
char process_state(pid_t pid);
// The main thread's blocked signals ("SigBlk:" of /proc/PID/status).
uint64_t blocked_signals(pid_t pid);
// Waits up to 5 s for that letter.
bool wait_for_state(pid_t pid, char state);
// Waits up to 5 s until thread `tid` of `pid` is blocked in system call `number`.
bool wait_for_syscall(pid_t pid, pid_t tid, long number);

struct ThreadSnapshot {
  user_regs_struct regs{};
  user_fpregs_struct fpregs{};
  std::vector<unsigned char> xsave;  // NT_X86_XSTATE: x87, SSE, AVX and beyond
  std::vector<unsigned char> stack;  // [regs.rsp - stack.size(), regs.rsp)
};
// Seizes, interrupts and detaches thread `tid` (which must be blocked, so that it is where it
// was), reading its registers and the `stack_bytes` below its stack pointer.
ThreadSnapshot snapshot_blocked_thread(pid_t tid, size_t stack_bytes);

}  // namespace memprof::testing
