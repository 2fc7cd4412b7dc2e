// Ctrl-C as "stop now and finish properly" for commands that leave state in the target (a
// report window, a full-screen terminal): while an Interruption is alive, SIGINT and SIGTERM
// set a flag instead of killing the CLI, and the previous handlers come back when it ends.
#pragma once

#include <csignal>

#include <chrono>

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

}  // namespace memprof::attach
