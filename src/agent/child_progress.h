// Whether a forked child is still getting somewhere. The agent's one thread waits for the child
// that writes a heap dump; a child that sleeps with no CPU time and no I/O has hung (blocked on
// a lock whose owner did not survive the fork, on a FIFO, on a C extension's condition), and
// without a limit it would hold that thread -- and every later request, detach included -- for
// as long as the target lives.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace memprof::agent {

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

 private:
  std::chrono::milliseconds limit_;
  std::optional<ChildProgress> last_;
  std::chrono::steady_clock::time_point still_since_{};
};

// "sleeping in pipe_read", "in disk wait", ...: for the error that names why a child was given
// up on.
std::string describe_state(const ChildProgress& progress);

}  // namespace memprof::agent
