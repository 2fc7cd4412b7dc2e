// What `memprof top` shows: one frame of text from two snapshots (live_snapshot.h), sized to
// the terminal, and the keys that change it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attach/live_snapshot.h"

namespace memprof::attach {

enum class SortKey { kCount, kBytes, kGrowth };

struct TopSettings {
  Grouping grouping = Grouping::kBoth;
  SortKey sort = SortKey::kCount;
  bool paused = false;
  bool interactive = false;  // the full screen, which reads keys (not --once)
};

// Applies a key press; false when the key means quit.
bool apply_key(char key, TopSettings& settings);

struct TopFrame {
  pid_t pid = 0;
  const LiveSnapshot* now = nullptr;
  const LiveSnapshot* before = nullptr;  // null on the first frame: no rates yet
};

// The frame as lines no wider than `width`, at most `height` of them, with at most `max_rows`
// rows below the headers.
std::vector<std::string> render_top(const TopFrame& frame, const TopSettings& settings,
                                    size_t width, size_t height, size_t max_rows = SIZE_MAX);

// The rows, sorted as `settings` says (shared by the screen and --json).
std::vector<Row> sorted_rows(const TopFrame& frame, const TopSettings& settings);
// Objects allocated per second between the two snapshots (Ruby's own counter), or 0.
double allocation_rate(const TopFrame& frame);
// GC runs per second between the two snapshots, or 0.
double gc_rate(const TopFrame& frame);

// What the latest snapshot holds in all: objects (blocks with --native) and their bytes.
struct LiveTotals {
  uint64_t count = 0;
  uint64_t bytes = 0;
};
LiveTotals live_totals(const TopFrame& frame);

}  // namespace memprof::attach
