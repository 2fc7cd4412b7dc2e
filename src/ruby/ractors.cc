#include "ruby/ractors.h"

#include <atomic>

#include "core/util/raw_sleep.h"

namespace memprof::ruby {

namespace {

// Set on the creating thread before the second Ractor exists; the new Ractor's threads start
// after that, so a relaxed load on them sees it.
std::atomic<bool> g_several_ractors = false;

}  // namespace

bool several_ractors() noexcept { return g_several_ractors.load(std::memory_order_relaxed); }

void note_ractor_start() noexcept { g_several_ractors.store(true, std::memory_order_relaxed); }

long living_ractors() {
#if RUBY_API_VERSION_MAJOR >= 3
  return NUM2LONG(rb_funcall(rb_cRactor, rb_intern("count"), 0));
#else
  return 1;
#endif
}

bool main_ractor_alone(int patience_ms) {
  for (int waited = 0;; ++waited) {
    if (living_ractors() == 1) return true;
    if (waited >= patience_ms) return false;
    // A Ractor whose result was just taken ends within microseconds; without the GVL of the
    // main Ractor released here, its threads run on other cores anyway.
    sleep_without_libc(std::chrono::milliseconds(1));
  }
}

}  // namespace memprof::ruby
