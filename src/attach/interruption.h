// Ctrl-C as "stop now and finish properly" for commands that leave state in the target (a
// report window, a full-screen terminal): while an Interruption is alive, SIGINT and SIGTERM
// set a flag instead of killing the CLI, and the previous handlers come back when it ends.
#pragma once

#include <csignal>

#include <chrono>
#include <string_view>

namespace memprof::attach {

class Interruption {
 public:
  Interruption();
  ~Interruption();
  Interruption(const Interruption&) = delete;
  Interruption& operator=(const Interruption&) = delete;

  static bool requested();
  // Sleeps for `duration`, or until interrupted; false when interrupted.
  static bool sleep_for(std::chrono::milliseconds duration);

 private:
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

// While alive, a Ctrl-C (or SIGTERM) caught by an Interruption is also answered at once with
// `text` on stderr, written by the signal handler: for a step that cannot be cut short, such
// as a trace hooking two thousand functions of a busy process, so that the stop it waits for
// is not met with silence. `text` must outlive the notice.
class InterruptionNotice {
 public:
  explicit InterruptionNotice(std::string_view text);
  ~InterruptionNotice();
  InterruptionNotice(const InterruptionNotice&) = delete;
  InterruptionNotice& operator=(const InterruptionNotice&) = delete;
};

}  // namespace memprof::attach
