// HijackedThread: makes a stopped thread of the target call functions, then puts it back exactly,
// and lets it put itself back if memprof dies meanwhile.
//
// It saves the general registers and the XSAVE area (the callee may use any vector register) when
// constructed. Below the red zone it writes a kernel signal frame describing the thread as it was
// (signal_frame.h), once; each call's return address leads to rt_sigreturn on that frame. So if
// memprof is killed while the thread runs a call (SIGKILL, the OOM killer: the kernel detaches
// the thread), the call returns, rt_sigreturn restores registers, vector state and signal mask,
// and the thread goes on where it was.
//
// The return path: the first call maps one page, read and execute, and writes a stub there
// that stores rax in the frame, unblocks and sends the thread a signal nobody handles (SIGURG or
// SIGWINCH; with memprof alive it stops the thread there, with memprof dead the kernel discards
// it) and calls rt_sigreturn. The call to mmap itself returns into libc's own rt_sigreturn trampoline,
// with the thread run by PTRACE_SYSCALL: its result is read at the mmap system call's exit and
// the thread caught at the rt_sigreturn's entry (as are the stub's returns when the process
// handles or blocks both signals). From there memprof sets up the next call, or puts the thread
// back itself from a stop in the kernel's signal code: registers (with rax = -ERESTARTSYS and
// orig_rax of a thread stopped inside a restartable system call, so that the kernel restarts
// it exactly), vector state, stack bytes. The last call unmaps the page. When no trampoline or
// page can be had (a seccomp filter or a security module refusing executable memory), calls
// return to address 0 instead, whose SIGSEGV is caught and never delivered: then a memprof
// killed mid-call kills the target.
//
// Signals that arrive while the thread runs a call are recorded and delivered after the restore,
// by finish().
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
#include "inject/call_frame.h"
#include "inject/ptrace_session.h"
#include "inject/target_libc.h"

namespace memprof::inject {

// An integer argument, or a string written into the call frame and passed by address.
using CallArgument = std::variant<uint64_t, std::string>;

class HijackedThread {
 public:
  // `tid` must be seized in `session` and stopped; `regs` are its registers at that stop. The
  // string arguments of any one call must fit in `string_capacity` bytes (NULs included).
  static Result<HijackedThread> take(PtraceSession& session, pid_t tid,
                                     const user_regs_struct& regs, const TargetLibc& libc,
                                     uint64_t string_capacity);
  HijackedThread(HijackedThread&& other) noexcept;
  HijackedThread& operator=(HijackedThread&&) = delete;
  ~HijackedThread();

  // Calls `function(arguments...)` (at most 6) and returns rax. `what` names the call in errors.
  Result<uint64_t> call(uint64_t function, const std::vector<CallArgument>& arguments,
                        std::string_view what, std::chrono::milliseconds timeout);

  // Whether a memprof killed during a call would leave the thread able to put itself back.
  bool survives_memprof() const { return return_path_ != ReturnPath::kToZero; }

  // Unmaps the return path's page, puts back the registers, vector state and stack bytes, then
  // detaches, delivering the signals recorded during the calls.
  Status finish();

 private:
  enum class ReturnPath {
    kToZero,          // return address 0: the SIGSEGV is the return
    kLibcTrampoline,  // libc's rt_sigreturn trampoline: the result is the last syscall's
    kStub,            // memprof's page: the result is stored in the frame
  };
  struct Saved {
    user_regs_struct regs{};
    std::vector<unsigned char> vector_state;
    uint64_t blocked_signals = 0;
  };

  HijackedThread(PtraceSession& session, pid_t tid, const TargetLibc& libc, Saved saved,
                 const CallFrame& frame);
  Status prepare_return_path(std::chrono::milliseconds timeout);
  Result<uint64_t> call_via(ReturnPath path, uint64_t function,
                            const std::vector<CallArgument>& arguments, std::string_view what,
                            std::chrono::milliseconds timeout);
  Status wait_for_return(ReturnPath path, std::string_view what,
                         std::chrono::milliseconds timeout, uint64_t& value);
  // At a syscall stop: true when it is the entry of the return path's rt_sigreturn.
  Result<bool> returned_at_syscall(ReturnPath path, int64_t& last_result);
  uint64_t return_address(ReturnPath path) const;
  // How the thread runs a call: to its next system call when the return is caught there.
  PtraceSession::Until resume_until(ReturnPath path) const;
  // Where the trampoline's `mov $15, %eax` starts; rt_sigreturn's syscall ends 7 bytes later.
  uint64_t trampoline_start(ReturnPath path) const;
  Status leave_sigreturn_stop();
  Status restore();
  Status save_stack();

  PtraceSession* session_;
  pid_t tid_;
  proc::RemoteMemory memory_;
  const TargetLibc* libc_;
  Saved saved_;
  CallFrame frame_;
  ReturnPath return_path_ = ReturnPath::kToZero;
  bool return_path_prepared_ = false;
  uint64_t stub_page_ = 0;
  int quiet_signal_ = 0;  // the stub's signal to itself; 0: its rt_sigreturn is caught instead
  pid_t stub_pid_ = 0;     // the process's pid as it knows itself (its pid namespace's), the sender of that signal
  std::vector<unsigned char> saved_stack_;
  bool frame_written_ = false;
  bool mask_checked_ = false;        // the frame's signal mask read again once the thread ran
  bool modified_ = false;            // registers or stack differ from the saved ones
  bool at_signal_delivery_ = false;  // stopped at the SIGSEGV of a return to 0
  uint64_t at_sigreturn_of_ = 0;     // stopped at a return path's rt_sigreturn: its trampoline
  std::vector<siginfo_t> deferred_signals_;
  bool active_ = true;  // false once moved from or finished
};

}  // namespace memprof::inject
