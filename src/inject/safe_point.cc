#include "inject/safe_point.h"

#include <unistd.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <map>
#include <string_view>
#include <vector>

#include "core/proc/threads.h"
#include "core/util/proc_file.h"
#include "inject/waiting_syscalls.h"

namespace memprof::inject {

namespace {

using Clock = std::chrono::steady_clock;

// How long an interrupted thread has to report its stop; longer means uninterruptible sleep.
constexpr std::chrono::milliseconds kStopTimeout{50};
// Attempts on one thread before moving to the next: more for the leader, which is preferred.
constexpr int kLeaderAttempts = 4;
constexpr int kOtherAttempts = 2;

// 100..300 µs, varied so that retries do not fall into step with a periodic loop.
void let_run_briefly(int attempt) {
  timespec delay{0, (100 + (attempt * 73) % 200) * 1000L};
  ::nanosleep(&delay, nullptr);
}

bool ends_with_syscall_instruction(uint64_t rip, const proc::RemoteMemory& memory) {
  std::array<unsigned char, 2> bytes{};
  return memory.read(rip - 2, bytes).ok() && bytes[0] == 0x0f && bytes[1] == 0x05;
}

struct Observation {
  std::string doing;
  int tries = 0;
};

enum class Outcome { kSafe, kUnsafe, kGone };

class SafePointSearch {
 public:
  SafePointSearch(PtraceSession& session, const TargetLibc& libc, Clock::time_point deadline)
      : session_(session), libc_(libc), memory_(session.pid()), deadline_(deadline) {}

  Result<SafePoint> run() {
    while (Clock::now() < deadline_) {
      auto threads = candidates_in_order();
      if (threads.empty()) {
        if (!thread_exists(session_.pid())) {
          return err("process {} exited while memprof was looking for a thread to run dlopen in",
                     session_.pid());
        }
        let_run_briefly(0);  // only a zombie leader left for a moment: look again
        continue;
      }
      for (const Candidate& candidate : threads) {
        MEMPROF_TRY(outcome, try_thread(candidate.tid, candidate.attempts));
        if (outcome == Outcome::kSafe) return std::move(found_);
        if (Clock::now() >= deadline_) break;
      }
    }
    return err("found no safe moment to run dlopen in process {} within {} ms ({}); try again, "
               "or raise the timeout", session_.pid(),
               std::chrono::duration_cast<std::chrono::milliseconds>(timeout()).count(),
               summary());
  }

 private:
  Clock::duration timeout() const { return deadline_ - started_; }

  struct Candidate {
    pid_t tid;
    int attempts;
  };

  // The leader first; then threads asleep in the kernel (often in a waiting system call, so safe
  // at the first look, and they stop at once); then the running ones, which are mostly found
  // where they were no safer than the leader.
  std::vector<Candidate> candidates_in_order() const {
    std::vector<Candidate> sleeping, running;
    const pid_t pid = session_.pid();
    std::vector<Candidate> order;
    for (pid_t tid : proc::process_threads(pid)) {
      char state = thread_state(tid);
      // A zombie thread (a leader that called pthread_exit) never stops to be looked at.
      if (state == 'Z' || state == 'X' || state == '?') continue;
      if (tid == pid) {
        order.push_back({tid, kLeaderAttempts});
      } else {
        (state == 'S' ? sleeping : running).push_back({tid, kOtherAttempts});
      }
    }
    order.insert(order.end(), sleeping.begin(), sleeping.end());
    order.insert(order.end(), running.begin(), running.end());
    return order;
  }

  // The state letter of /proc/PID/task/TID/stat ('R', 'S', 'D', ...), '?' when unreadable.
  char thread_state(pid_t tid) const {
    auto stat = read_proc_file(fmt::format("/proc/{}/task/{}/stat", session_.pid(), tid));
    if (!stat) return '?';
    size_t paren = stat->rfind(')');  // the thread's name may hold anything
    return paren == std::string::npos || paren + 2 >= stat->size() ? '?' : (*stat)[paren + 2];
  }

  bool thread_exists(pid_t tid) const {
    return ::access(fmt::format("/proc/{}/task/{}", session_.pid(), tid).c_str(), F_OK) == 0;
  }

  // Up to `attempts` stops of `tid`; leaves it stopped when safe, detached otherwise.
  Result<Outcome> try_thread(pid_t tid, int attempts) {
    auto seized = session_.seize(tid);
    if (!seized) {
      if (!thread_exists(tid)) return Outcome::kGone;
      return seized.error();
    }
    for (int attempt = 0; attempt < attempts && Clock::now() < deadline_; ++attempt) {
      if (!session_.interrupt(tid).ok()) return Outcome::kGone;
      MEMPROF_TRY(event, session_.wait(tid, kStopTimeout));
      switch (event.kind) {
        case StopEvent::Kind::kExited:
          return Outcome::kGone;
        case StopEvent::Kind::kTimedOut:
          note(tid, "did not stop within 50 ms (uninterruptible sleep?)");
          (void)session_.detach(tid);
          return Outcome::kUnsafe;
        case StopEvent::Kind::kGroupStop:
          (void)session_.detach(tid);
          return err("process {} was stopped ({}) while memprof was attaching; resume it with "
                     "kill -CONT {} and try again", session_.pid(),
                     fmt::format("SIG{}", sigabbrev_np(event.signal)), session_.pid());
        case StopEvent::Kind::kSignal:
          // A signal was on its way: deliver it as if nothing happened and look again.
          MEMPROF_TRY_STATUS(session_.resume(tid, event.signal));
          continue;
        case StopEvent::Kind::kInterrupted:
        case StopEvent::Kind::kSyscall:  // not asked for here: judged like an interrupt-stop
          break;
      }
      auto stopped_at = Clock::now();
      MEMPROF_TRY(regs, session_.registers(tid));
      ThreadVerdict verdict = judge_stopped_thread(regs, libc_, memory_);
      if (verdict.safe) {
        found_ = SafePoint{tid, regs, std::move(verdict.doing), stopped_at};
        return Outcome::kSafe;
      }
      note(tid, std::move(verdict.doing));
      if (attempt + 1 == attempts) break;
      MEMPROF_TRY_STATUS(session_.resume(tid));
      let_run_briefly(attempt);
    }
    (void)session_.detach(tid);
    return Outcome::kUnsafe;
  }

  void note(pid_t tid, std::string doing) {
    auto& observation = observations_[tid];
    observation.doing = std::move(doing);
    ++observation.tries;
  }

  std::string summary() const {
    if (observations_.empty()) return "no thread could be stopped";
    std::string text;
    for (const auto& [tid, observation] : observations_) {
      if (!text.empty()) text += "; ";
      text += fmt::format("thread {} {} (last of {} looks)", tid, observation.doing,
                          observation.tries);
    }
    return text;
  }

  PtraceSession& session_;
  const TargetLibc& libc_;
  proc::RemoteMemory memory_;
  Clock::time_point started_ = Clock::now();
  Clock::time_point deadline_;
  std::map<pid_t, Observation> observations_;
  SafePoint found_;
};

}  // namespace

ThreadVerdict judge_stopped_thread(const user_regs_struct& regs, const TargetLibc& libc,
                                   const proc::RemoteMemory& memory) {
  const uint64_t rip = regs.rip;
  const auto syscall = static_cast<int64_t>(regs.orig_rax);
  if (libc.loader.contains(rip)) {
    // The loader's lock is recursive: dlopen would not wait for it but would change the object
    // list under the loader's feet.
    return {false, fmt::format("was in the dynamic loader ({})", libc.describe(rip))};
  }
  if (libc.libc.contains(rip)) {
    if (is_waiting_syscall(regs) && ends_with_syscall_instruction(rip, memory)) {
      return {true, fmt::format("was blocked in {} ({})", syscall_name(syscall),
                                libc.describe(rip))};
    }
    if (syscall >= 0) {
      return {false, fmt::format("was in {} ({})", syscall_name(syscall), libc.describe(rip))};
    }
    // Possibly inside malloc with an arena locked, or in any function holding a libc lock.
    return {false, fmt::format("was running {}", libc.describe(rip))};
  }
  return {true, fmt::format("was running {}", libc.describe(rip))};
}

Result<SafePoint> find_safe_point(PtraceSession& session, const TargetLibc& libc,
                                  std::chrono::milliseconds timeout) {
  return SafePointSearch(session, libc, Clock::now() + timeout).run();
}

}  // namespace memprof::inject
