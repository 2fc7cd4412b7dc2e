// Whether a forked child is still getting somewhere. The attach agent's one thread, and the
// thread that called Memprof.dump_all beside other threads, wait for a child that writes a heap
// dump; a child that sleeps with no CPU time and no I/O has hung (blocked on a lock whose owner
// did not survive the fork, on a C extension's condition, on a FIFO), and without a limit it
// would hold that thread -- for the agent, every later request, detach included -- for as long
// as the process lives.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace memprof {

struct ChildProgress {
  char state = '?';        // the letter of /proc/PID/stat: R, S, D, T, Z, ...
  uint64_t cpu_ticks = 0;  // utime + stime, in clock ticks
  uint64_t io_bytes = 0;   // rchar + wchar of /proc/PID/io; 0 where the kernel does not count
  std::string wchan;       // the kernel function it sleeps in, when the kernel says
};

// Nothing when the process is gone or /proc/PID/stat cannot be parsed.
std::optional<ChildProgress> read_child_progress(pid_t pid);

// Decides from samples over time when a child has stopped making progress: it has been asleep
// (S) for `limit` with the same CPU time and I/O. Running (R), waiting for the disk (D) and
// stopped by someone (T, a debugger) are not stalls: the child is working, or someone else
// holds it on purpose.
class StallWatch {
 public:
  explicit StallWatch(std::chrono::milliseconds limit) : limit_(limit) {}

  bool stalled(const ChildProgress& sample, std::chrono::steady_clock::time_point now);

  // "made no progress for 30 s (asleep in futex_wait_queue, no CPU time and no I/O)", for the
  // error that names why a stalled child was given up on.
  std::string describe(const ChildProgress& stalled_sample) const;

 private:
  std::chrono::milliseconds limit_;
  std::optional<ChildProgress> last_;
  std::chrono::steady_clock::time_point still_since_{};
};

// "asleep in pipe_read", "waiting for the disk", ...
std::string describe_state(const ChildProgress& progress);

// Ends a forked child that is of no use any more (hung, or its requester went away) and reaps
// it; a child that the app's own wait reaped first is gone already.
void kill_and_reap(pid_t pid) noexcept;

}  // namespace memprof
