#include "inject/hijacked_thread.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <optional>

#include "core/proc/process_view.h"
#include "core/util/proc_file.h"
#include "inject/signal_frame.h"

namespace memprof::inject {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kDirectionFlag = 0x400;  // the ABI wants it clear at every call
constexpr uint64_t kTrapFlag = 0x100;
constexpr std::chrono::milliseconds kStopAfterTimeout{500};
constexpr uint64_t kStubPageSize = 4096;

// memprof's return path: rax into the frame's siginfo (rsp is entry_rsp + 8 after the callee's
// ret); the signal unblocked and sent to the thread (one nobody handles, or 0: no signal); then
// rt_sigreturn on the frame, which puts the mask back too. With memprof alive the signal stops
// the thread right after its tgkill; with memprof dead the kernel discards it. The jmp runs
// only if a tracer skipped the rt_sigreturn.
constexpr uint32_t kResultDisplacement = kSiginfoOffset - 8;
static_assert(kResultDisplacement < 0x10000);
constexpr uint64_t kStubTrampolineOffset = 57;  // the mov $15 after tgkill's syscall
constexpr uint64_t kStubSyscallEnd = 64;
constexpr size_t kStubSignalSetOffset = 72;

void put32(unsigned char* at, uint32_t value) { std::memcpy(at, &value, sizeof(value)); }

std::array<unsigned char, 80> return_stub(pid_t pid, pid_t tid, int signal) {
  std::array<unsigned char, 80> code = {
      0x48, 0x89, 0x84, 0x24, 0, 0, 0, 0,  // 0: mov %rax, disp32(%rsp)
      0xbf, 0x01, 0x00, 0x00, 0x00,        // 8: mov $1 (SIG_UNBLOCK), %edi
      0x48, 0x8d, 0x35, 0, 0, 0, 0,        // 13: lea set(%rip), %rsi
      0x31, 0xd2,                          // 20: xor %edx, %edx
      0x41, 0xba, 0x08, 0x00, 0x00, 0x00,  // 22: mov $8, %r10d
      0xb8, 0x0e, 0x00, 0x00, 0x00,        // 28: mov $14 (SYS_rt_sigprocmask), %eax
      0x0f, 0x05,                          // 33: syscall
      0xbf, 0, 0, 0, 0,                    // 35: mov $pid, %edi
      0xbe, 0, 0, 0, 0,                    // 40: mov $tid, %esi
      0xba, 0, 0, 0, 0,                    // 45: mov $signal, %edx
      0xb8, 0xea, 0x00, 0x00, 0x00,        // 50: mov $234 (SYS_tgkill), %eax
      0x0f, 0x05,                          // 55: syscall
      0xb8, 0x0f, 0x00, 0x00, 0x00,        // 57: mov $15 (SYS_rt_sigreturn), %eax
      0x0f, 0x05,                          // 62: syscall
      0xeb, 0xf7,                          // 64: jmp back to the mov $15
  };
  put32(&code[4], kResultDisplacement);
  put32(&code[16], kStubSignalSetOffset - 20);  // relative to the lea's end
  put32(&code[36], static_cast<uint32_t>(pid));
  put32(&code[41], static_cast<uint32_t>(tid));
  put32(&code[46], static_cast<uint32_t>(signal));
  const uint64_t set = signal == 0 ? 0 : uint64_t{1} << (signal - 1);
  std::memcpy(&code[kStubSignalSetOffset], &set, sizeof(set));
  return code;
}

// A fault raised by an instruction of the call itself (as opposed to a signal sent by someone).
bool is_fault(int signal, const siginfo_t& info) {
  bool fault_signal = signal == SIGSEGV || signal == SIGBUS || signal == SIGILL ||
                      signal == SIGFPE || signal == SIGTRAP;
  return fault_signal && info.si_code > 0;
}

std::string signal_name(int signal) { return fmt::format("SIG{}", sigabbrev_np(signal)); }

// Sends a signal recorded during a call again, with its siginfo when the kernel allows it
// (queued by a process: si_code < 0), as a plain tgkill otherwise (the sender's pid and uid are
// then ours).
void resend(pid_t pid, pid_t tid, const siginfo_t& info) {
  if (info.si_code < 0 && info.si_code != SI_TKILL) {
    siginfo_t copy = info;
    if (::syscall(SYS_rt_tgsigqueueinfo, pid, tid, info.si_signo, &copy) == 0) return;
  }
  ::syscall(SYS_tgkill, pid, tid, info.si_signo);
}

// A signal mask field ("SigBlk:", "SigCgt:", ...) of a status file, nullopt when unreadable.
std::optional<uint64_t> signal_mask(const std::string& status_path, std::string_view field) {
  auto status = read_proc_file(status_path);
  if (!status) return std::nullopt;
  const size_t at = status->find(field);
  if (at == std::string::npos) return std::nullopt;
  return std::strtoull(status->c_str() + at + field.size(), nullptr, 16);
}

// The thread's blocked signals, 0 when unreadable.
uint64_t blocked_signals(pid_t pid, pid_t tid) {
  return signal_mask(fmt::format("/proc/{}/task/{}/status", pid, tid), "SigBlk:").value_or(0);
}

// A signal whose default action is to ignore it and that the process does not handle: sent by
// a thread to itself, unblocked, it stops the thread for memprof, or vanishes. 0 when there is
// none.
int quiet_signal(pid_t pid) {
  const auto caught = signal_mask(fmt::format("/proc/{}/status", pid), "SigCgt:");
  if (!caught) return 0;
  for (int signal : {SIGURG, SIGWINCH}) {
    if ((*caught & (uint64_t{1} << (signal - 1))) == 0) return signal;
  }
  return 0;
}

}  // namespace

Result<HijackedThread> HijackedThread::take(PtraceSession& session, pid_t tid,
                                            const user_regs_struct& regs, const TargetLibc& libc,
                                            uint64_t string_capacity) {
  Saved saved;
  saved.regs = regs;
  MEMPROF_TRY(vector_state, session.vector_state(tid));
  saved.vector_state = std::move(vector_state);
  saved.blocked_signals = blocked_signals(session.pid(), tid);
  const CallFrame frame = plan_call_frame(regs.rsp, string_capacity, saved.vector_state.size());
  return HijackedThread(session, tid, libc, std::move(saved), frame);
}

HijackedThread::HijackedThread(PtraceSession& session, pid_t tid, const TargetLibc& libc,
                               Saved saved, const CallFrame& frame)
    : session_(&session),
      tid_(tid),
      memory_(session.pid()),
      libc_(&libc),
      saved_(std::move(saved)),
      frame_(frame) {}

HijackedThread::HijackedThread(HijackedThread&& other) noexcept
    : session_(other.session_),
      tid_(other.tid_),
      memory_(other.memory_),
      libc_(other.libc_),
      saved_(std::move(other.saved_)),
      frame_(other.frame_),
      return_path_(other.return_path_),
      return_path_prepared_(other.return_path_prepared_),
      stub_page_(other.stub_page_),
      quiet_signal_(other.quiet_signal_),
      saved_stack_(std::move(other.saved_stack_)),
      frame_written_(other.frame_written_),
      mask_checked_(other.mask_checked_),
      modified_(other.modified_),
      at_signal_delivery_(other.at_signal_delivery_),
      at_sigreturn_of_(other.at_sigreturn_of_),
      deferred_signals_(std::move(other.deferred_signals_)),
      active_(std::exchange(other.active_, false)) {}

HijackedThread::~HijackedThread() {
  if (active_) (void)finish();
}

Status HijackedThread::save_stack() {
  if (!saved_stack_.empty()) return ok_status();
  std::vector<unsigned char> bytes(frame_.saved_end - frame_.saved_begin);
  MEMPROF_TRY_STATUS(memory_.read(frame_.saved_begin, bytes));
  saved_stack_ = std::move(bytes);
  return ok_status();
}

uint64_t HijackedThread::return_address(ReturnPath path) const {
  switch (path) {
    case ReturnPath::kToZero:
      return 0;
    case ReturnPath::kLibcTrampoline:
      return libc_->sigreturn_trampoline;
    case ReturnPath::kStub:
      return stub_page_;
  }
  return 0;
}

PtraceSession::Until HijackedThread::resume_until(ReturnPath path) const {
  const bool at_syscall =
      path == ReturnPath::kLibcTrampoline || (path == ReturnPath::kStub && quiet_signal_ == 0);
  return at_syscall ? PtraceSession::Until::kNextSyscall : PtraceSession::Until::kAnyStop;
}

uint64_t HijackedThread::trampoline_start(ReturnPath path) const {
  return path == ReturnPath::kStub ? stub_page_ + kStubTrampolineOffset
                                   : libc_->sigreturn_trampoline;
}

Status HijackedThread::prepare_return_path(std::chrono::milliseconds timeout) {
  return_path_prepared_ = true;
  if (libc_->sigreturn_trampoline == 0 || libc_->mmap == 0) return ok_status();
  auto page = call_via(ReturnPath::kLibcTrampoline, libc_->mmap,
                       {uint64_t{0}, kStubPageSize, uint64_t{PROT_READ | PROT_EXEC},
                        uint64_t{MAP_PRIVATE | MAP_ANONYMOUS}, static_cast<uint64_t>(-1),
                        uint64_t{0}},
                       "mmap", timeout);
  if (!page) return page.error();
  // Refused (MAP_FAILED: -errno): SELinux's execmem, a seccomp filter. Calls return to 0.
  if (static_cast<int64_t>(*page) < 0 && static_cast<int64_t>(*page) > -4096) {
    return ok_status();
  }
  stub_page_ = *page;
  quiet_signal_ = quiet_signal(session_->pid());
  // Written through /proc/PID/mem: the page is never writable and executable at once.
  // The stub's tgkill runs in the target: its pid and tid there (a pid namespace of its own
  // numbers them otherwise, and the signal went to no thread: every call "did not return").
  stub_pid_ = proc::pid_inside(session_->pid());
  const auto stub = return_stub(stub_pid_, proc::tid_inside(session_->pid(), tid_), quiet_signal_);
  if (!session_->write_through_mem_file(stub_page_, stub).ok()) {
    // A kernel that lets no one write read-only pages through /proc/PID/mem: calls return to 0.
    if (libc_->munmap != 0) {
      auto unmapped = call_via(ReturnPath::kLibcTrampoline, libc_->munmap, {stub_page_, kStubPageSize},
                               "munmap", timeout);
      if (unmapped && *unmapped == 0) stub_page_ = 0;
    }
    return ok_status();
  }
  return_path_ = ReturnPath::kStub;
  return ok_status();
}

Result<uint64_t> HijackedThread::call(uint64_t function, const std::vector<CallArgument>& arguments,
                                      std::string_view what, std::chrono::milliseconds timeout) {
  if (!return_path_prepared_) MEMPROF_TRY_STATUS(prepare_return_path(timeout));
  return call_via(return_path_, function, arguments, what, timeout);
}

Result<uint64_t> HijackedThread::call_via(ReturnPath path, uint64_t function,
                                          const std::vector<CallArgument>& arguments,
                                          std::string_view what,
                                          std::chrono::milliseconds timeout) {
  constexpr size_t kMaxArguments = 6;
  if (arguments.size() > kMaxArguments) return err("{}: more than 6 arguments", what);
  std::vector<unsigned char> strings;
  std::array<uint64_t, kMaxArguments> values{};
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (const auto* text = std::get_if<std::string>(&arguments[i])) {
      values[i] = frame_.strings + strings.size();
      strings.insert(strings.end(), text->begin(), text->end());
      strings.push_back(0);
    } else {
      values[i] = std::get<uint64_t>(arguments[i]);
    }
  }
  if (strings.size() > frame_.string_capacity) {
    return err("{}: {} bytes of string arguments, room for {}", what, strings.size(),
               frame_.string_capacity);
  }
  MEMPROF_TRY_STATUS(save_stack());

  // The signal frame first (once; it never changes), then this call's return address and
  // strings: whenever the thread runs, its frame is whole.
  modified_ = true;
  if (!frame_written_) {
    const auto frame =
        encode_signal_frame(frame_, return_address(path), saved_.regs, saved_.vector_state,
                            this_cpu_xsave_layout(saved_.vector_state.size()), saved_.blocked_signals);
    MEMPROF_TRY_STATUS(memory_.write(frame_.entry_rsp, frame));
    frame_written_ = true;
  } else {
    const uint64_t return_to = return_address(path);
    MEMPROF_TRY_STATUS(memory_.write(
        frame_.entry_rsp, {reinterpret_cast<const unsigned char*>(&return_to), sizeof(return_to)}));
  }
  if (!strings.empty()) MEMPROF_TRY_STATUS(memory_.write(frame_.strings, strings));

  user_regs_struct regs = saved_.regs;
  regs.rip = function;
  regs.rsp = frame_.entry_rsp;
  regs.rdi = values[0];
  regs.rsi = values[1];
  regs.rdx = values[2];
  regs.rcx = values[3];
  regs.r8 = values[4];
  regs.r9 = values[5];
  regs.rax = 0;  // no vector registers used by a variadic callee
  // Not in a system call any more: without this the kernel could "restart" the interrupted
  // call by moving rip back 2 bytes into dlopen. At the rt_sigreturn of the previous call, the
  // same skips that rt_sigreturn.
  regs.orig_rax = static_cast<uint64_t>(-1);
  regs.eflags &= ~(kDirectionFlag | kTrapFlag);

  at_signal_delivery_ = false;
  at_sigreturn_of_ = 0;
  MEMPROF_TRY_STATUS(session_->set_registers(tid_, regs));
  MEMPROF_TRY_STATUS(session_->resume(tid_, 0, resume_until(path)));
  uint64_t value = 0;
  MEMPROF_TRY_STATUS(wait_for_return(path, what, timeout, value));
  return value;
}

Result<bool> HijackedThread::returned_at_syscall(ReturnPath path, int64_t& last_result) {
  MEMPROF_TRY(stop, session_->syscall_stop(tid_));
  if (!mask_checked_) {
    // A thread stopped inside ppoll, pselect or sigsuspend showed the call's temporary mask;
    // by its first system call for us the kernel has put its own mask back.
    mask_checked_ = true;
    const uint64_t blocked = blocked_signals(session_->pid(), tid_);
    if (blocked != saved_.blocked_signals) {
      saved_.blocked_signals = blocked;
      MEMPROF_TRY_STATUS(memory_.write(
          frame_.entry_rsp + kSignalMaskOffset,
          {reinterpret_cast<const unsigned char*>(&blocked), sizeof(blocked)}));
    }
  }
  if (!stop.entry) {
    last_result = stop.result;
    return false;
  }
  if (stop.number != SYS_rt_sigreturn) return false;
  MEMPROF_TRY(regs, session_->registers(tid_));
  const uint64_t end = path == ReturnPath::kStub ? stub_page_ + kStubSyscallEnd
                                                 : libc_->sigreturn_trampoline_end;
  return regs.rip == end && regs.rsp == frame_.entry_rsp + 8;
}

Status HijackedThread::wait_for_return(ReturnPath path, std::string_view what,
                                       std::chrono::milliseconds timeout, uint64_t& value) {
  const pid_t pid = session_->pid();
  const auto deadline = Clock::now() + timeout;
  const auto until = resume_until(path);
  int64_t last_result = 0;
  for (;;) {
    auto remaining = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
    MEMPROF_TRY(event, session_->wait(tid_, std::max(remaining, std::chrono::microseconds{0})));
    switch (event.kind) {
      case StopEvent::Kind::kExited:
        active_ = false;  // nothing left to restore
        return err("process {} {} while its thread {} ran {}", pid, describe_exit(event), tid_,
                   what);
      case StopEvent::Kind::kTimedOut:
        (void)session_->interrupt(tid_);
        if (auto stop = session_->wait(tid_, kStopAfterTimeout);
            stop && stop->kind == StopEvent::Kind::kSignal) {
          // A signal came first: the restore drops it at this stop, so send it again after.
          if (auto info = session_->signal_info(tid_)) deferred_signals_.push_back(*info);
        }
        return err("{} did not return within {} ms in process {}; memprof put thread {} back "
                   "where it was, but the library may be partly loaded and the loader lock "
                   "held; restart the process if it hangs", what, timeout.count(), pid, tid_);
      case StopEvent::Kind::kSyscall: {
        MEMPROF_TRY(returned, returned_at_syscall(path, last_result));
        if (returned) {
          at_sigreturn_of_ = trampoline_start(path);
          if (path == ReturnPath::kStub) {
            MEMPROF_TRY(stored, memory_.read_value<uint64_t>(frame_.result_slot()));
            value = stored;
          } else {
            value = static_cast<uint64_t>(last_result);
          }
          return ok_status();
        }
        MEMPROF_TRY_STATUS(session_->resume(tid_, 0, until));
        continue;
      }
      case StopEvent::Kind::kInterrupted:
      case StopEvent::Kind::kGroupStop:
        // Not ours to keep: the call goes on (a group-stopped thread rejoins the stop when
        // detached).
        MEMPROF_TRY_STATUS(session_->resume(tid_, 0, until));
        continue;
      case StopEvent::Kind::kSignal:
        break;
    }
    MEMPROF_TRY(info, session_->signal_info(tid_));
    MEMPROF_TRY(regs, session_->registers(tid_));
    if (path == ReturnPath::kToZero && event.signal == SIGSEGV && regs.rip == 0 &&
        info.si_code > 0) {
      at_signal_delivery_ = true;  // the SIGSEGV is dropped when the thread is let go
      value = regs.rax;
      return ok_status();
    }
    if (path == ReturnPath::kStub && quiet_signal_ != 0 && event.signal == quiet_signal_ &&
        info.si_code == SI_TKILL && info.si_pid == stub_pid_ &&
        regs.rip == stub_page_ + kStubTrampolineOffset) {
      at_signal_delivery_ = true;  // the stub's own signal, dropped when the thread is let go
      MEMPROF_TRY(stored, memory_.read_value<uint64_t>(frame_.result_slot()));
      value = stored;
      return ok_status();
    }
    if (is_fault(event.signal, info)) {
      at_signal_delivery_ = true;
      return err("{} crashed with {} at {:#x} in process {}; memprof put thread {} back where it "
                 "was, but the library may be partly loaded", what, signal_name(event.signal),
                 regs.rip, pid, tid_);
    }
    // Someone else's signal: hold it until the thread is back where it was.
    deferred_signals_.push_back(info);
    MEMPROF_TRY_STATUS(session_->resume(tid_, 0, until));
  }
}

// From the entry of the return path's rt_sigreturn to a stop in the kernel's signal code, where
// registers put back by ptrace get the kernel's own system call restart. Meanwhile the thread
// is pointed at the trampoline's start: if memprof dies now, it runs rt_sigreturn again.
Status HijackedThread::leave_sigreturn_stop() {
  MEMPROF_TRY(regs, session_->registers(tid_));
  regs.rip = at_sigreturn_of_;
  regs.orig_rax = static_cast<uint64_t>(-1);
  MEMPROF_TRY_STATUS(session_->set_registers(tid_, regs));
  MEMPROF_TRY_STATUS(session_->interrupt(tid_));
  MEMPROF_TRY_STATUS(session_->resume(tid_));
  const auto deadline = Clock::now() + kStopAfterTimeout;
  for (;;) {
    auto remaining = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
    MEMPROF_TRY(event, session_->wait(tid_, std::max(remaining, std::chrono::microseconds{0})));
    switch (event.kind) {
      case StopEvent::Kind::kInterrupted:
        at_sigreturn_of_ = 0;
        return ok_status();
      case StopEvent::Kind::kSignal: {
        MEMPROF_TRY(info, session_->signal_info(tid_));
        deferred_signals_.push_back(info);
        MEMPROF_TRY_STATUS(session_->resume(tid_));
        continue;
      }
      case StopEvent::Kind::kGroupStop:
      case StopEvent::Kind::kSyscall:
        MEMPROF_TRY_STATUS(session_->resume(tid_));
        continue;
      case StopEvent::Kind::kExited:
        active_ = false;
        return err("process {} {} while memprof put thread {} back", session_->pid(),
                   describe_exit(event), tid_);
      case StopEvent::Kind::kTimedOut:
        return err("thread {} of process {} did not stop to be put back; it returns through "
                   "rt_sigreturn by itself", tid_, session_->pid());
    }
  }
}

Status HijackedThread::restore() {
  if (!modified_) return ok_status();
  if (at_sigreturn_of_ != 0) MEMPROF_TRY_STATUS(leave_sigreturn_stop());
  MEMPROF_TRY_STATUS(session_->set_vector_state(tid_, saved_.vector_state));
  MEMPROF_TRY_STATUS(session_->set_registers(tid_, saved_.regs));
  // The stub unblocked its signal; the mask is read once the thread has run (see
  // returned_at_syscall), so this is the thread's own mask.
  if (mask_checked_) MEMPROF_TRY_STATUS(session_->set_signal_mask(tid_, saved_.blocked_signals));
  if (!saved_stack_.empty()) MEMPROF_TRY_STATUS(memory_.write(frame_.saved_begin, saved_stack_));
  modified_ = false;
  return ok_status();
}

Status HijackedThread::finish() {
  if (!active_) return ok_status();
  // The page goes while the thread can still return through libc's trampoline; after a
  // timeout or a crash (the thread is elsewhere) it stays: 4 KB, unused.
  if (stub_page_ != 0 && at_sigreturn_of_ != 0 && libc_->munmap != 0) {
    auto unmapped = call_via(ReturnPath::kLibcTrampoline, libc_->munmap,
                             {stub_page_, kStubPageSize}, "munmap", kStopAfterTimeout);
    if (unmapped && *unmapped == 0) stub_page_ = 0;
  }
  if (!active_) return ok_status();  // the process exited during munmap
  active_ = false;
  Status restored = restore();
  const pid_t pid = session_->pid();
  size_t first_resent = 0;
  int signal_at_detach = 0;
  // At a signal-delivery-stop the first deferred signal can take the place of the SIGSEGV,
  // siginfo and all.
  if (at_signal_delivery_ && !deferred_signals_.empty() &&
      session_->set_signal_info(tid_, deferred_signals_.front()).ok()) {
    signal_at_detach = deferred_signals_.front().si_signo;
    first_resent = 1;
  }
  Status detached = session_->detach(tid_, signal_at_detach);
  for (size_t i = first_resent; i < deferred_signals_.size(); ++i) {
    resend(pid, tid_, deferred_signals_[i]);
  }
  if (!restored) return restored;
  return detached;
}

}  // namespace memprof::inject
