// Holds back SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGTSTP in the calling thread while a target
// thread runs a call for us: were memprof to die or stop then, the target thread would return to
// address 0 (or stay stopped with borrowed registers). The signals are delivered when this ends.
// SIGKILL cannot be held back; inject.h says what it does.
#pragma once

#include <signal.h>

namespace memprof::inject {

class DeferredTermination {
 public:
  DeferredTermination() {
    sigset_t held;
    sigemptyset(&held);
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP}) sigaddset(&held, signal);
    pthread_sigmask(SIG_BLOCK, &held, &previous_);
  }
  DeferredTermination(const DeferredTermination&) = delete;
  DeferredTermination& operator=(const DeferredTermination&) = delete;
  ~DeferredTermination() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

 private:
  sigset_t previous_;
};

}  // namespace memprof::inject
