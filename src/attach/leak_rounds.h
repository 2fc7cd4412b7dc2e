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

// How strong "grew in every round" is: a site whose live count only fluctuates (the objects
// of requests in flight, stale words on a stack) does so by chance. Its rounds + 1 readings,
// when any order of them is as likely as another, come in increasing order once in
// (rounds + 1)! -- 1 in 24 for 3 rounds, 1 in 5,040 for 6 -- and less often when counts tie.
// Returns that N of "1 in N", at most UINT64_MAX.
uint64_t fluctuation_odds(size_t rounds);

}  // namespace memprof::attach
