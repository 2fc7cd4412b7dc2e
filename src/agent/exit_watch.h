// Holds _exit while a recording runs, until the CLI has read the last of it.
//
// exit() waits for the CLI in an atexit handler (recording_sessions.h), but a program that ends
// by _exit never runs one: dash after `sh -c`, Ruby's exit!, a worker that leaves by _exit. Its
// calls and blocks since the CLI's last read (up to 10 ms of a trace, a second of a native
// session) went with it, and so did the children it started. An entry hook on libc's _exit
// (exit() ends through it too, by then with nothing left to wait for) makes the process wait
// the same way, at most 2 s. Only the process the agent serves waits: a vfork child that
// leaves by _exit shares its memory and goes on at once, and so does a forked child, whose
// copy of the sessions is not read by anyone.
#pragma once

#include <memory>

#include "core/hook/entry_hook.h"
#include "core/util/result.h"

namespace memprof::agent {

class ExitWatch {
 public:
  static Result<std::unique_ptr<ExitWatch>> install();
  ExitWatch(const ExitWatch&) = delete;
  ExitWatch& operator=(const ExitWatch&) = delete;
  ~ExitWatch() = default;  // the hook's destructor restores _exit's bytes

 private:
  explicit ExitWatch(std::unique_ptr<hook::EntryHook> hook) : hook_(std::move(hook)) {}
  std::unique_ptr<hook::EntryHook> hook_;
};

}  // namespace memprof::agent
