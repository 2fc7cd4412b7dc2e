// Holds back SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGTSTP in the calling thread while a target
// thread runs a call for us: memprof then puts the thread back itself (a thread whose memprof dies
// restores itself through its signal frame, but a stopped memprof would keep it stopped with
// borrowed registers). The signals are delivered when this ends. SIGKILL cannot be held back;
// inject.h says what it does.
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
