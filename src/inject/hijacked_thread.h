// HijackedThread: makes a stopped thread of the target call functions, then puts it back exactly.
//
// It saves the general registers and the XSAVE area (the callee may use any vector register) when
// constructed, builds each call's frame below the red zone (see call_frame.h), sets rip to the
// function with orig_rax = -1 (so the kernel's syscall-restart logic leaves the new registers
// alone), and lets the thread run until it returns to address 0, where the SIGSEGV is caught and
// never delivered. restore() (or the destructor, on error paths) puts back the registers — with
// rax = -ERESTARTSYS and orig_rax of a thread stopped inside a restartable system call, so that
// the kernel restarts it — and the stack bytes.
//
// Signals that arrive while the thread runs a call are recorded and delivered after the restore,
// by finish(): the first with its original siginfo, the others re-sent.
#pragma once

#include <signal.h>
#include <sys/user.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/proc/remote_memory.h"
#include "core/util/result.h"
#include "inject/ptrace_session.h"

namespace memprof::inject {

// An integer argument, or a string written into the call frame and passed by address.
using CallArgument = std::variant<uint64_t, std::string>;

class HijackedThread {
 public:
  // `tid` must be seized in `session` and stopped; `regs` are its registers at that stop.
  static Result<HijackedThread> take(PtraceSession& session, pid_t tid,
                                     const user_regs_struct& regs);
  HijackedThread(HijackedThread&& other) noexcept;
  HijackedThread& operator=(HijackedThread&&) = delete;
  ~HijackedThread();

  // Calls `function(arguments...)` (at most 6) and returns rax. `what` names the call in errors.
  Result<uint64_t> call(uint64_t function, const std::vector<CallArgument>& arguments,
                        std::string_view what, std::chrono::milliseconds timeout);

  // Puts back the registers, vector state and stack bytes. Idempotent.
  Status restore();
  // Restores, then detaches, delivering the signals recorded during the calls.
  Status finish();

 private:
  HijackedThread(PtraceSession& session, pid_t tid, const user_regs_struct& regs,
                 std::vector<unsigned char> vector_state);
  Status wait_for_return(std::string_view what, std::chrono::milliseconds timeout,
                         uint64_t& value);
  Status save_stack(uint64_t begin, uint64_t end);

  PtraceSession* session_;
  pid_t tid_;
  proc::RemoteMemory memory_;
  user_regs_struct saved_regs_;
  std::vector<unsigned char> saved_vector_state_;
  uint64_t saved_stack_address_ = 0;
  std::vector<unsigned char> saved_stack_;
  bool modified_ = false;            // registers or stack differ from the saved ones
  bool at_signal_delivery_ = false;  // stopped at the SIGSEGV of a return to 0
  std::vector<siginfo_t> deferred_signals_;
  bool active_ = true;  // false once moved from or finished
};

}  // namespace memprof::inject
