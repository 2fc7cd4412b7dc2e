#include "inject/ptrace_session.h"

#include <elf.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/proc/process_access.h"
#include "core/util/scoped_fd.h"
#include "inject/preflight.h"

namespace memprof::inject {

namespace {

using Clock = std::chrono::steady_clock;

// How long the destructor waits for a running thread to stop before detaching it.
constexpr std::chrono::milliseconds kDetachStopTimeout{500};
// Large enough for any XSAVE layout shipped so far (AMX tiles bring it to ~11 KB).
constexpr size_t kMaxVectorState = 64 * 1024;

long ptrace_request(enum __ptrace_request request, pid_t tid, void* address, void* data) {
  return ::ptrace(request, tid, address, data);
}

void* as_data(long value) { return reinterpret_cast<void*>(value); }

// Waiting for a stop: yield first (a stop usually comes within microseconds), then sleep with a
// growing interval so a slow stop does not burn a core that the target may need.
void pause_before_next_poll(int round) {
  if (round < 32) {
    ::sched_yield();
    return;
  }
  long micros = std::min(10L << std::min((round - 32) / 8, 7), 1000L);
  timespec delay{0, micros * 1000};
  ::nanosleep(&delay, nullptr);
}

StopEvent decode(int status) {
  StopEvent event;
  if (WIFEXITED(status)) {
    event.kind = StopEvent::Kind::kExited;
    event.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    event.kind = StopEvent::Kind::kExited;
    event.signal = WTERMSIG(status);
  } else if (WIFSTOPPED(status)) {
    event.signal = WSTOPSIG(status);
    if (event.signal == (SIGTRAP | 0x80)) {  // PTRACE_O_TRACESYSGOOD's mark
      event.kind = StopEvent::Kind::kSyscall;
      event.signal = 0;
    } else if ((status >> 16) == PTRACE_EVENT_STOP) {
      // With PTRACE_SEIZE both interrupt-stops and group-stops are event stops; the signal tells
      // them apart (SIGTRAP for PTRACE_INTERRUPT).
      event.kind = event.signal == SIGTRAP ? StopEvent::Kind::kInterrupted
                                           : StopEvent::Kind::kGroupStop;
    } else {
      event.kind = StopEvent::Kind::kSignal;
    }
  }
  return event;
}

}  // namespace

std::string describe_exit(const StopEvent& event) {
  if (event.signal != 0) return fmt::format("was killed by SIG{}", sigabbrev_np(event.signal));
  return fmt::format("exited with status {}", event.exit_code);
}

PtraceSession::~PtraceSession() {
  for (auto& thread : threads_) {
    if (!thread.gone) (void)detach(thread.tid);
  }
}

PtraceSession::Thread* PtraceSession::find(pid_t tid) {
  auto it = std::find_if(threads_.begin(), threads_.end(), [&](auto& t) { return t.tid == tid; });
  return it == threads_.end() ? nullptr : &*it;
}

const PtraceSession::Thread* PtraceSession::find(pid_t tid) const {
  return const_cast<PtraceSession*>(this)->find(tid);
}

bool PtraceSession::is_seized(pid_t tid) const {
  const Thread* thread = find(tid);
  return thread != nullptr && !thread->gone;
}

Status PtraceSession::ptrace_error(const char* what, pid_t tid) const {
  int error = errno;
  if (error == ESRCH) {
    return err("thread {} of process {} is gone or not stopped ({} failed)", tid, pid_, what);
  }
  if (error == EPERM || error == EACCES) {
    return err("cannot attach to process {}: {}", pid_, proc::explain_access_denied(pid_));
  }
  return err("{} on thread {} of process {} failed: {}", what, tid, pid_, std::strerror(error));
}

Status PtraceSession::seize(pid_t tid) {
  if (is_seized(tid)) return ok_status();
  // TRACESYSGOOD: syscall-stops (asked for by resume(Until::kNextSyscall) only) are told from a
  // real SIGTRAP.
  if (ptrace_request(PTRACE_SEIZE, tid, nullptr, as_data(PTRACE_O_TRACESYSGOOD)) != 0) {
    const int error = errno;
    if (error == EPERM) {
      if (auto traced = traced_by_another(pid_)) return *traced;
    }
    errno = error;
    return ptrace_error("PTRACE_SEIZE", tid);
  }
  if (Thread* old = find(tid)) {
    *old = Thread{tid};
  } else {
    threads_.push_back(Thread{tid});
  }
  return ok_status();
}

Status PtraceSession::interrupt(pid_t tid) {
  if (ptrace_request(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
    return ptrace_error("PTRACE_INTERRUPT", tid);
  }
  return ok_status();
}

Result<StopEvent> PtraceSession::wait(pid_t tid, std::chrono::microseconds timeout) {
  Thread* thread = find(tid);
  if (thread == nullptr || thread->gone) {
    return err("thread {} of process {} is not traced", tid, pid_);
  }
  const auto deadline = Clock::now() + timeout;
  for (int round = 0;; ++round) {
    int status = 0;
    pid_t reported = ::waitpid(tid, &status, __WALL | WNOHANG);
    if (reported == tid) {
      StopEvent event = decode(status);
      thread->stopped = event.kind != StopEvent::Kind::kExited;
      thread->gone = event.kind == StopEvent::Kind::kExited;
      return event;
    }
    if (reported < 0 && errno != EINTR) {
      if (errno == ECHILD) {  // reaped elsewhere: the thread no longer exists
        thread->gone = true;
        return StopEvent{StopEvent::Kind::kExited};
      }
      return err("waiting for thread {} of process {} failed: {}", tid, pid_,
                 std::strerror(errno));
    }
    if (Clock::now() >= deadline) return StopEvent{StopEvent::Kind::kTimedOut};
    pause_before_next_poll(round);
  }
}

Status PtraceSession::resume(pid_t tid, int signal, Until until) {
  const bool to_syscall = until == Until::kNextSyscall;
  if (ptrace_request(to_syscall ? PTRACE_SYSCALL : PTRACE_CONT, tid, nullptr, as_data(signal)) != 0) {
    return ptrace_error(to_syscall ? "PTRACE_SYSCALL" : "PTRACE_CONT", tid);
  }
  if (Thread* thread = find(tid)) thread->stopped = false;
  return ok_status();
}

Status PtraceSession::detach(pid_t tid, int signal) {
  Thread* thread = find(tid);
  if (thread == nullptr || thread->gone) return ok_status();
  if (!thread->stopped) {
    // PTRACE_DETACH needs a stopped tracee. A signal that arrives meanwhile is passed on.
    if (!interrupt(tid).ok()) {
      thread->gone = true;  // ESRCH: it exited
      return ok_status();
    }
    MEMPROF_TRY(event, wait(tid, kDetachStopTimeout));
    if (event.kind == StopEvent::Kind::kExited) return ok_status();
    if (event.kind == StopEvent::Kind::kTimedOut) {
      return err("thread {} of process {} did not stop to be detached; it stays attached until "
                 "memprof exits", tid, pid_);
    }
    if (event.kind == StopEvent::Kind::kSignal && signal == 0) signal = event.signal;
  }
  long result = ptrace_request(PTRACE_DETACH, tid, nullptr, as_data(signal));
  thread->gone = true;
  if (result != 0 && errno != ESRCH) return ptrace_error("PTRACE_DETACH", tid);
  return ok_status();
}

Result<user_regs_struct> PtraceSession::registers(pid_t tid) const {
  user_regs_struct regs{};
  if (ptrace_request(PTRACE_GETREGS, tid, nullptr, &regs) != 0) {
    return ptrace_error("PTRACE_GETREGS", tid).error();
  }
  return regs;
}

Status PtraceSession::set_registers(pid_t tid, const user_regs_struct& regs) const {
  if (ptrace_request(PTRACE_SETREGS, tid, nullptr, const_cast<user_regs_struct*>(&regs)) != 0) {
    return ptrace_error("PTRACE_SETREGS", tid);
  }
  return ok_status();
}

Result<std::vector<unsigned char>> PtraceSession::vector_state(pid_t tid) const {
  std::vector<unsigned char> state(kMaxVectorState);
  iovec io{state.data(), state.size()};
  if (ptrace_request(PTRACE_GETREGSET, tid, as_data(NT_X86_XSTATE), &io) != 0) {
    return ptrace_error("PTRACE_GETREGSET(NT_X86_XSTATE)", tid).error();
  }
  state.resize(io.iov_len);
  return state;
}

Status PtraceSession::set_vector_state(pid_t tid, std::vector<unsigned char> state) const {
  iovec io{state.data(), state.size()};
  if (ptrace_request(PTRACE_SETREGSET, tid, as_data(NT_X86_XSTATE), &io) != 0) {
    return ptrace_error("PTRACE_SETREGSET(NT_X86_XSTATE)", tid);
  }
  return ok_status();
}

Result<PtraceSession::SyscallStop> PtraceSession::syscall_stop(pid_t tid) const {
  __ptrace_syscall_info info{};
  if (ptrace_request(PTRACE_GET_SYSCALL_INFO, tid, as_data(sizeof(info)), &info) <= 0) {
    return ptrace_error("PTRACE_GET_SYSCALL_INFO", tid).error();
  }
  if (info.op == PTRACE_SYSCALL_INFO_ENTRY) return SyscallStop{true, info.entry.nr, 0};
  if (info.op == PTRACE_SYSCALL_INFO_EXIT) return SyscallStop{false, 0, info.exit.rval};
  return err("thread {} of process {} is not at a system call stop", tid, pid_);
}

Status PtraceSession::write_through_mem_file(uint64_t address,
                                             std::span<const unsigned char> bytes) const {
  const std::string path = fmt::format("/proc/{}/mem", pid_);
  const ScopedFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return err("cannot open {}: {}", path, std::strerror(errno));
  const ssize_t written = ::pwrite(fd.get(), bytes.data(), bytes.size(), static_cast<off_t>(address));
  const int error = errno;
  if (written != static_cast<ssize_t>(bytes.size())) {
    return err("cannot write {} bytes at {:#x} through {}: {}", bytes.size(), address, path,
               written < 0 ? std::strerror(error) : "short write");
  }
  return ok_status();
}

Status PtraceSession::set_signal_mask(pid_t tid, uint64_t blocked) const {
  if (ptrace_request(PTRACE_SETSIGMASK, tid, as_data(sizeof(blocked)), &blocked) != 0) {
    return ptrace_error("PTRACE_SETSIGMASK", tid);
  }
  return ok_status();
}

Result<siginfo_t> PtraceSession::signal_info(pid_t tid) const {
  siginfo_t info{};
  if (ptrace_request(PTRACE_GETSIGINFO, tid, nullptr, &info) != 0) {
    return ptrace_error("PTRACE_GETSIGINFO", tid).error();
  }
  return info;
}

Status PtraceSession::set_signal_info(pid_t tid, const siginfo_t& info) const {
  if (ptrace_request(PTRACE_SETSIGINFO, tid, nullptr, const_cast<siginfo_t*>(&info)) != 0) {
    return ptrace_error("PTRACE_SETSIGINFO", tid);
  }
  return ok_status();
}

}  // namespace memprof::inject
