#include "attach/leak_rounds.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <unordered_map>

namespace memprof::attach {

int64_t LeakSuspect::total_growth() const {
  return std::accumulate(growth_per_round.begin(), growth_per_round.end(), int64_t{0});
}

std::vector<LeakSuspect> find_leak_suspects(const std::vector<LiveSnapshot>& snapshots) {
  if (snapshots.size() < 2) return {};
  // Count per key in each snapshot.
  std::vector<std::unordered_map<std::string, const LiveGroup*>> by_key(snapshots.size());
  for (size_t i = 0; i < snapshots.size(); ++i)
    for (const LiveGroup& group : snapshots[i].groups)
      by_key[i][row_key(group, Grouping::kBoth)] = &group;
  auto count_in = [&](size_t i, const std::string& key) -> int64_t {
    auto it = by_key[i].find(key);
    return it == by_key[i].end() ? 0 : static_cast<int64_t>(it->second->count);
  };
  std::vector<LeakSuspect> suspects;
  for (const auto& [key, last] : by_key.back()) {
    LeakSuspect suspect{key, last->count, last->bytes, {}};
    bool grew_every_round = true;
    for (size_t i = 1; i < snapshots.size() && grew_every_round; ++i) {
      int64_t growth = count_in(i, key) - count_in(i - 1, key);
      grew_every_round = growth > 0;
      suspect.growth_per_round.push_back(growth);
    }
    if (grew_every_round) suspects.push_back(std::move(suspect));
  }
  std::sort(suspects.begin(), suspects.end(), [](const LeakSuspect& a, const LeakSuspect& b) {
    return a.total_growth() != b.total_growth() ? a.total_growth() > b.total_growth()
                                                : a.key < b.key;
  });
  return suspects;
}

uint64_t fluctuation_odds(size_t rounds) {
  uint64_t odds = 1;
  for (uint64_t readings = 2; readings <= rounds + 1; ++readings) {
    if (odds > UINT64_MAX / readings) return UINT64_MAX;
    odds *= readings;
  }
  return odds;
}

}  // namespace memprof::attach
