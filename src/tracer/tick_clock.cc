#include "tracer/tick_clock.h"

#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "core/util/raw_sleep.h"

namespace memprof::tracer {
namespace {

// 1: rdtsc, 0: CLOCK_MONOTONIC. Decided before any hook reads it.
std::atomic<int> g_use_tsc{0};

uint64_t monotonic_ns() {
  timespec now;
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

bool invariant_tsc() {
  std::FILE* file = std::fopen("/proc/cpuinfo", "r");
  if (file == nullptr) return false;
  bool constant = false, nonstop = false;
  char line[4096];
  while ((!constant || !nonstop) && std::fgets(line, sizeof(line), file) != nullptr) {
    if (std::strncmp(line, "flags", 5) != 0) continue;
    constant = std::strstr(line, " constant_tsc") != nullptr;
    nonstop = std::strstr(line, " nonstop_tsc") != nullptr;
    break;  // every CPU lists the same flags
  }
  std::fclose(file);
  return constant && nonstop;
}

// A (ticks, nanoseconds) pair taken as close together as the two clocks allow.
void sample(uint64_t& ticks, uint64_t& ns) {
  ticks = now_ticks();
  ns = monotonic_ns();
}

// A process may have made rdtsc fault (prctl PR_SET_TSC, as some sandboxes do).
bool tsc_allowed() {
  int mode = 0;
  return ::prctl(PR_GET_TSC, &mode, 0, 0, 0) != 0 || mode != PR_TSC_SIGSEGV;
}

}  // namespace

uint64_t now_ticks() {
  if (g_use_tsc.load(std::memory_order_relaxed)) return __rdtsc();
  return monotonic_ns();
}

void TickClock::calibrate() {
  const bool tsc = invariant_tsc() && tsc_allowed();
  g_use_tsc.store(tsc ? 1 : 0, std::memory_order_relaxed);
  sample(start_ticks_, start_ns_);
  ns_per_tick_ = 1.0;
  if (!tsc) return;
  sleep_without_libc(std::chrono::milliseconds(5));
  refine();
}

void TickClock::refine() {
  if (!g_use_tsc.load(std::memory_order_relaxed)) return;
  uint64_t ticks, ns;
  sample(ticks, ns);
  if (ticks > start_ticks_ && ns > start_ns_)
    ns_per_tick_ = static_cast<double>(ns - start_ns_) / static_cast<double>(ticks - start_ticks_);
}

uint64_t TickClock::to_monotonic_ns(uint64_t ticks) const {
  double offset = (static_cast<double>(ticks) - static_cast<double>(start_ticks_)) * ns_per_tick_;
  return static_cast<uint64_t>(static_cast<double>(start_ns_) + offset);
}

uint64_t TickClock::to_ns(uint64_t ticks) const {
  return static_cast<uint64_t>(static_cast<double>(ticks) * ns_per_tick_);
}

}  // namespace memprof::tracer
