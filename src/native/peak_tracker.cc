#include "native/peak_tracker.h"

namespace memprof::native {

void PeakTracker::copy_sites(uint64_t now, CallSiteTable& sites) noexcept {
  if (!copying_.try_lock()) return;  // another thread is copying a peak at least as recent
  if (now > copied_at_.load(std::memory_order_relaxed)) {
    uint32_t limit = sites.id_limit();
    for (uint32_t id = kOverflowSite; id < limit; ++id) {
      SiteCounters* row = sites.ready_row(id);
      if (row == nullptr) continue;
      uint64_t freed = row->freed_bytes.load(std::memory_order_relaxed);
      uint64_t allocated = row->allocated_bytes.load(std::memory_order_relaxed);
      row->peak_live_bytes.store(allocated - freed, std::memory_order_relaxed);
    }
    copied_at_.store(now, std::memory_order_relaxed);
  }
  copying_.unlock();
}

}  // namespace memprof::native
