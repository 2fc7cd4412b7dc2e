// A reading of the live tracked objects of an attached process (Memprof::Agent's "groups"), and
// what `top` and `leaks` compute from two or more of them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/track/aggregate.h"
#include "core/util/result.h"

namespace memprof::attach {

// Live objects of one file:line and class: the agent sends Memprof::Native.live_groups, which
// is the tracker's own grouping (core/track/aggregate.h).
using LiveGroup = track::NamedGroup;

struct LiveSnapshot {
  double time = 0;               // the target's monotonic clock, seconds
  uint64_t total_allocated = 0;  // GC.stat(:total_allocated_objects)
  uint64_t gc_count = 0;
  std::vector<LiveGroup> groups;
  // memprof top --native (native_live.h): groups are a Ruby line and a call site, counts are
  // malloc blocks; a line below 0 means "no line".
  bool native = false;
  bool ruby_lines = true;  // false: no block had a Ruby line (a program without Ruby)
  // Read from several processes: those that could not be read, as "process N: why".
  std::vector<std::string> left_out;
  // With Notes::kTake: what the agents asked to have said about their groups (objects the
  // tracker had to forget), as "process N: what".
  std::vector<std::string> notes;
};

Result<LiveSnapshot> parse_snapshot(const std::string& json);

// Whether the target runs a full GC before it counts. Without one, "live" includes the garbage
// made since the last GC: fine for rates (`top`), wrong for growth (`leaks`), where a site of
// short-lived objects can grow round after round just because no GC ran in between.
enum class Collect { kNo, kGarbageFirst };
// Whether the reading takes the agent's note (Memprof::LostObjects: said once, by the first
// reading that takes it), for a command that shows it: `stats` does, `top` and `leaks` leave it.
enum class Notes { kLeave, kTake };

// Asks the agent of `pid` for one.
Result<LiveSnapshot> read_snapshot(pid_t pid, Collect collect = Collect::kNo, Notes notes = Notes::kLeave);
// One reading of several processes (a master and its workers), added up: groups of the same
// file:line and class merged, allocation and GC counters summed. A process that cannot be read
// (a worker that has ended or is a zombie, a wrapper without Ruby) is left out and named in
// `left_out`; fails only when none can be read, with the first one's reason.
Result<LiveSnapshot> read_snapshot(const std::vector<pid_t>& pids, Collect collect = Collect::kNo,
                                   Notes notes = Notes::kLeave);

// How rows are grouped: by class, by file:line, or by both.
enum class Grouping { kClass, kSite, kBoth };
// The grouping rows are made by: blocks without Ruby lines group by call site alone.
Grouping shown_grouping(const LiveSnapshot& snapshot, Grouping chosen);

struct Row {
  std::string key;  // "String", "app.rb:12" or "app.rb:12 String"
  // By both: the key's two parts, "app.rb:12" and "String" (or a call site), for the screen to
  // shorten each its own way. Empty otherwise.
  std::string where, what;
  uint64_t count = 0;
  uint64_t bytes = 0;
  int64_t growth = 0;  // count minus the count in the previous snapshot
};

std::string row_key(const LiveGroup& group, Grouping grouping);
// The rows of `now` by its shown_grouping, with growth against `before` (none when it is null).
std::vector<Row> rows_of(const LiveSnapshot& now, const LiveSnapshot* before, Grouping grouping);

}  // namespace memprof::attach
