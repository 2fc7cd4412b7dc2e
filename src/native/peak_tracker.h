// Total live bytes, their maximum, and what each site held near that maximum.
//
// Every tracked allocation and free moves one shared counter (the sum must be exact to know
// the peak). Per-site bytes at the peak would need a copy of every site's counter at each new
// maximum, so the copy is taken only when the peak exceeds the previous copy's total by more
// than 1% (at most a few hundred copies for a peak going from kilobytes to gigabytes), by the
// one thread that sees it, while the others carry on (try-lock). The copy is therefore taken
// within 1% of the final peak, and reads the sites while other threads keep allocating.
#pragma once

#include <atomic>
#include <cstdint>

#include "native/call_site_table.h"
#include "native/spin_lock.h"

namespace memprof::native {

class PeakTracker {
 public:
  void add(uint64_t bytes, CallSiteTable& sites) noexcept {
    uint64_t now = live_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    uint64_t peak = peak_.load(std::memory_order_relaxed);
    if (now <= peak) return;
    while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    if (now - now / 101 > copied_at_.load(std::memory_order_relaxed)) copy_sites(now, sites);
  }
  void subtract(uint64_t bytes) noexcept { live_.fetch_sub(bytes, std::memory_order_relaxed); }

  uint64_t live_bytes() const noexcept { return live_.load(std::memory_order_relaxed); }
  uint64_t peak_bytes() const noexcept { return peak_.load(std::memory_order_relaxed); }
  // Total live bytes when the sites' peak_live_bytes were copied.
  uint64_t copied_at() const noexcept { return copied_at_.load(std::memory_order_relaxed); }

 private:
  void copy_sites(uint64_t now, CallSiteTable& sites) noexcept;

  std::atomic<uint64_t> live_{0};
  std::atomic<uint64_t> peak_{0};
  std::atomic<uint64_t> copied_at_{0};
  SpinLock copying_;
};

}  // namespace memprof::native
