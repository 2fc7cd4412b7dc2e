// `memprof leaks`: the three-dump technique done live. A group (file:line and class) is a leak
// suspect when its live count grew in every round -- temporary objects come and go, caches fill
// and stop; what a leak makes only accumulates.
#pragma once

#include <vector>

#include "attach/live_snapshot.h"

namespace memprof::attach {

struct LeakSuspect {
  std::string key;     // "file:line Class"
  uint64_t live = 0;   // in the last snapshot
  uint64_t bytes = 0;  // in the last snapshot
  std::vector<int64_t> growth_per_round;
  int64_t total_growth() const;
};

// `snapshots` in time order (at least two); suspects sorted by total growth, largest first.
std::vector<LeakSuspect> find_leak_suspects(const std::vector<LiveSnapshot>& snapshots);

}  // namespace memprof::attach
