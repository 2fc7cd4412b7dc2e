// The tracer's clock. A hook reads it twice per call, so it must be cheap: the time-stamp
// counter (rdtsc, ~15 ns on this 2-vCPU KVM machine) where the CPU says it runs at a constant
// rate and does not stop (constant_tsc and nonstop_tsc) and the process has not made it fault
// (PR_SET_TSC), CLOCK_MONOTONIC otherwise (~40 ns
// through kvm-clock's vDSO). Records and counters hold ticks; the reader turns them into
// CLOCK_MONOTONIC nanoseconds with a rate measured against that clock since the trace began
// (calibrate() at the start, refine() at each read: the longer the baseline, the closer).
#pragma once

#include <cstdint>

namespace memprof::tracer {

uint64_t now_ticks();

class TickClock {
 public:
  // Decides rdtsc or CLOCK_MONOTONIC and measures the tick rate over ~5 ms.
  void calibrate();
  // Measures the rate again over everything since calibrate().
  void refine();
  // A tick count as CLOCK_MONOTONIC nanoseconds.
  uint64_t to_monotonic_ns(uint64_t ticks) const;
  // A number of ticks as nanoseconds.
  uint64_t to_ns(uint64_t ticks) const;

 private:
  uint64_t start_ticks_ = 0;
  uint64_t start_ns_ = 0;
  double ns_per_tick_ = 1.0;
};

}  // namespace memprof::tracer
