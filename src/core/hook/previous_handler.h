// Passing a signal that is not ours to the handler the program installed before us.
#pragma once

#include <signal.h>

namespace memprof::hook {

// Calls `previous` (a disposition saved by our sigaction) for the signal, when it names a
// handler; false when it is SIG_DFL or SIG_IGN, so the caller decides what the default means.
inline bool call_previous_handler(const struct sigaction& previous, int signal, siginfo_t* info,
                                  void* context) {
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction == nullptr) return false;
    previous.sa_sigaction(signal, info, context);
    return true;
  }
  if (previous.sa_handler == SIG_DFL || previous.sa_handler == SIG_IGN || previous.sa_handler == nullptr)
    return false;
  previous.sa_handler(signal);
  return true;
}

}  // namespace memprof::hook
