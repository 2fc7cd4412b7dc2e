#include "attach/interruption.h"

#include <unistd.h>

#include <atomic>
#include <thread>

namespace memprof::attach {
namespace {

volatile sig_atomic_t g_requested = 0;
// InterruptionNotice's text (lock-free atomics: read by the signal handler).
std::atomic<const char*> g_notice{nullptr};
std::atomic<size_t> g_notice_size{0};

}  // namespace

Interruption::Interruption() {
  g_requested = 0;
  struct sigaction on_signal {};
  on_signal.sa_handler = [](int) {
    g_requested = 1;
    if (const char* text = g_notice.load()) (void)!::write(STDERR_FILENO, text, g_notice_size.load());
  };
  ::sigaction(SIGINT, &on_signal, &previous_int_);
  ::sigaction(SIGTERM, &on_signal, &previous_term_);
}

Interruption::~Interruption() {
  ::sigaction(SIGINT, &previous_int_, nullptr);
  ::sigaction(SIGTERM, &previous_term_, nullptr);
}

bool Interruption::requested() { return g_requested != 0; }

bool Interruption::sleep_for(std::chrono::milliseconds duration) {
  // Signals do not cut std::this_thread::sleep_for short (it restarts), so sleep in steps.
  constexpr std::chrono::milliseconds kStep(50);
  auto deadline = std::chrono::steady_clock::now() + duration;
  while (!requested()) {
    auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, kStep));
  }
  return false;
}

InterruptionNotice::InterruptionNotice(std::string_view text) {
  g_notice_size.store(text.size());
  g_notice.store(text.data());
}

InterruptionNotice::~InterruptionNotice() { g_notice.store(nullptr); }

}  // namespace memprof::attach
