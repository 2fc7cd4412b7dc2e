#include "inject/hijacked_thread.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstring>

#include "inject/call_frame.h"

namespace memprof::inject {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kDirectionFlag = 0x400;  // the ABI wants it clear at every call
constexpr uint64_t kTrapFlag = 0x100;
constexpr std::chrono::milliseconds kStopAfterTimeout{500};

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

}  // namespace

Result<HijackedThread> HijackedThread::take(PtraceSession& session, pid_t tid,
                                            const user_regs_struct& regs) {
  MEMPROF_TRY(vector_state, session.vector_state(tid));
  return HijackedThread(session, tid, regs, std::move(vector_state));
}

HijackedThread::HijackedThread(PtraceSession& session, pid_t tid, const user_regs_struct& regs,
                               std::vector<unsigned char> vector_state)
    : session_(&session),
      tid_(tid),
      memory_(session.pid()),
      saved_regs_(regs),
      saved_vector_state_(std::move(vector_state)) {}

HijackedThread::HijackedThread(HijackedThread&& other) noexcept
    : session_(other.session_),
      tid_(other.tid_),
      memory_(other.memory_),
      saved_regs_(other.saved_regs_),
      saved_vector_state_(std::move(other.saved_vector_state_)),
      saved_stack_address_(other.saved_stack_address_),
      saved_stack_(std::move(other.saved_stack_)),
      modified_(other.modified_),
      at_signal_delivery_(other.at_signal_delivery_),
      deferred_signals_(std::move(other.deferred_signals_)),
      active_(std::exchange(other.active_, false)) {}

HijackedThread::~HijackedThread() {
  if (active_) (void)finish();
}

Status HijackedThread::save_stack(uint64_t begin, uint64_t end) {
  // Every frame ends at the same address (rsp - 128), so a later, larger frame only extends the
  // saved range downwards.
  if (!saved_stack_.empty()) end = saved_stack_address_;
  if (begin >= end) return ok_status();
  std::vector<unsigned char> bytes(end - begin);
  MEMPROF_TRY_STATUS(memory_.read(begin, bytes));
  bytes.insert(bytes.end(), saved_stack_.begin(), saved_stack_.end());
  saved_stack_ = std::move(bytes);
  saved_stack_address_ = begin;
  return ok_status();
}

Result<uint64_t> HijackedThread::call(uint64_t function, const std::vector<CallArgument>& arguments,
                                      std::string_view what, std::chrono::milliseconds timeout) {
  constexpr size_t kMaxArguments = 6;
  if (arguments.size() > kMaxArguments) return err("{}: more than 6 arguments", what);
  uint64_t string_bytes = 0;
  for (const auto& argument : arguments) {
    if (const auto* text = std::get_if<std::string>(&argument)) string_bytes += text->size() + 1;
  }
  const CallFrame frame = plan_call_frame(saved_regs_.rsp, string_bytes);
  MEMPROF_TRY_STATUS(save_stack(frame.saved_begin, frame.saved_end));

  // The frame's bytes: return address 0, then the strings, zero padding up to the red zone.
  std::vector<unsigned char> bytes(frame.saved_end - frame.entry_rsp, 0);
  std::array<uint64_t, kMaxArguments> values{};
  uint64_t string_at = frame.strings;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (const auto* text = std::get_if<std::string>(&arguments[i])) {
      std::memcpy(bytes.data() + (string_at - frame.entry_rsp), text->c_str(), text->size() + 1);
      values[i] = string_at;
      string_at += text->size() + 1;
    } else {
      values[i] = std::get<uint64_t>(arguments[i]);
    }
  }

  user_regs_struct regs = saved_regs_;
  regs.rip = function;
  regs.rsp = frame.entry_rsp;
  regs.rdi = values[0];
  regs.rsi = values[1];
  regs.rdx = values[2];
  regs.rcx = values[3];
  regs.r8 = values[4];
  regs.r9 = values[5];
  regs.rax = 0;  // no vector registers used by a variadic callee
  // Not in a system call any more: without this the kernel could "restart" the interrupted
  // call by moving rip back 2 bytes into dlopen.
  regs.orig_rax = static_cast<uint64_t>(-1);
  regs.eflags &= ~(kDirectionFlag | kTrapFlag);

  modified_ = true;
  at_signal_delivery_ = false;
  MEMPROF_TRY_STATUS(memory_.write(frame.entry_rsp, bytes));
  MEMPROF_TRY_STATUS(session_->set_registers(tid_, regs));
  MEMPROF_TRY_STATUS(session_->resume(tid_));
  uint64_t value = 0;
  MEMPROF_TRY_STATUS(wait_for_return(what, timeout, value));
  return value;
}

Status HijackedThread::wait_for_return(std::string_view what, std::chrono::milliseconds timeout,
                                       uint64_t& value) {
  const pid_t pid = session_->pid();
  const auto deadline = Clock::now() + timeout;
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
      case StopEvent::Kind::kInterrupted:
      case StopEvent::Kind::kGroupStop:
        // Not ours to keep: the call goes on (a group-stopped thread rejoins the stop when
        // detached).
        MEMPROF_TRY_STATUS(session_->resume(tid_));
        continue;
      case StopEvent::Kind::kSignal:
        break;
    }
    MEMPROF_TRY(info, session_->signal_info(tid_));
    MEMPROF_TRY(regs, session_->registers(tid_));
    if (event.signal == SIGSEGV && regs.rip == 0 && info.si_code > 0) {
      at_signal_delivery_ = true;  // the SIGSEGV is dropped when the thread is let go
      value = regs.rax;
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
    MEMPROF_TRY_STATUS(session_->resume(tid_));
  }
}

Status HijackedThread::restore() {
  if (!modified_) return ok_status();
  MEMPROF_TRY_STATUS(session_->set_vector_state(tid_, saved_vector_state_));
  MEMPROF_TRY_STATUS(session_->set_registers(tid_, saved_regs_));
  if (!saved_stack_.empty()) MEMPROF_TRY_STATUS(memory_.write(saved_stack_address_, saved_stack_));
  modified_ = false;
  return ok_status();
}

Status HijackedThread::finish() {
  if (!active_) return ok_status();
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
