// Holds an exec while a recording runs, until the CLI has read what the old program recorded.
//
// An exec replaces the program at once: calls the CLI had not read yet (it reads every 10 ms)
// went with the old program, and the CLI learnt of the exec only from a closed connection. An
// entry hook on libc's execve (every exec* but the raw system call goes through it) makes the
// calling thread wait until a reply produced after the exec began has been written (at most
// kExecWaitMs), and readouts say an exec is coming. The exec then goes on; one that fails
// (execvp tries each PATH directory) returns to the program, which the recording follows on.
//
// Only the process the agent serves waits: a vfork child (posix_spawn's too) shares its memory
// and calls execve as another pid, and goes on at once, counted (child_processes.h).
#pragma once

#include <memory>

#include "core/hook/entry_hook.h"
#include "core/util/result.h"

namespace memprof::agent {

inline constexpr int kExecWaitMs = 2000;

class ExecWatch {
 public:
  static Result<std::unique_ptr<ExecWatch>> install();
  ExecWatch(const ExecWatch&) = delete;
  ExecWatch& operator=(const ExecWatch&) = delete;
  ~ExecWatch() = default;  // the hook's destructor restores execve's bytes

 private:
  explicit ExecWatch(std::unique_ptr<hook::EntryHook> hook) : hook_(std::move(hook)) {}
  std::unique_ptr<hook::EntryHook> hook_;
};

// Whether a thread of this process waits in execve for a reply (readouts say so).
bool exec_waiting();
// A reply has been written that was produced while exec_waiting(): the exec goes on.
void release_waiting_exec();

}  // namespace memprof::agent
