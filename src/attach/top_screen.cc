#include "attach/top_screen.h"

#include <algorithm>
#include <string_view>

#include "heap/units.h"

namespace memprof::attach {

namespace {

// What the rows are grouped by, in the header (first) and above the keys (second): Ruby
// objects by class and file:line, native blocks (--native) by call site and Ruby line.
std::pair<const char*, const char*> grouping_names(Grouping grouping, bool native) {
  switch (grouping) {
    case Grouping::kClass: return native ? std::pair{"call site", "CALL SITE"} : std::pair{"class", "CLASS"};
    case Grouping::kSite: return native ? std::pair{"Ruby line", "RUBY LINE"} : std::pair{"file:line", "FILE:LINE"};
    case Grouping::kBoth: break;
  }
  return native ? std::pair{"Ruby line + call site", "RUBY LINE  CALL SITE"}
                : std::pair{"file:line + class", "FILE:LINE CLASS"};
}

const char* sort_name(SortKey sort) {
  switch (sort) {
    case SortKey::kCount: return "count";
    case SortKey::kBytes: return "bytes";
    case SortKey::kGrowth: break;
  }
  return "growth";
}

// Keeps the end of a long key (the file name and line matter more than the directories), from
// a directory's start when it has one: ".../json/common.rb:216", not "....1.0/json/common.rb:216"
// (a cut inside "3.1.0").
std::string fit_left(const std::string& text, size_t width) {
  if (text.size() <= width) return text;
  if (width <= 3) return text.substr(text.size() - width);
  const size_t cut = text.size() - (width - 3);
  std::string_view tail = std::string_view(text).substr(cut);
  size_t slash = tail.find('/');
  if (text[cut - 1] != '/' && slash != std::string_view::npos && slash + 1 < tail.size())
    tail.remove_prefix(slash);
  return "..." + std::string(tail);
}

std::string fit_right(const std::string& text, size_t width) {
  if (text.size() <= width) return text;
  if (width <= 3) return text.substr(0, width);
  return text.substr(0, width - 3) + "...";
}

// A row's key in `width` columns. By both, each part keeps its telling end: the file's tail and
// line, the class's or call site's start; the line gets at least half the width, so that a long
// call site (`top --native`) does not push it out.
std::string fit_key(const Row& row, size_t width) {
  if (row.key.size() <= width || row.where.empty() || row.what.empty() || width < 8)
    return fit_left(row.key, width);
  const size_t what_room = width - 1 - std::min(row.where.size(), width / 2);
  const size_t what_width = std::min(row.what.size(), what_room);
  const size_t where_width = width - 1 - what_width;
  return fit_left(row.where, where_width) + " " + fit_right(row.what, what_width);
}

std::string signed_count(int64_t value) {
  std::string digits = heap::count_text(static_cast<uint64_t>(value < 0 ? -value : value));
  return value > 0 ? "+" + digits : value < 0 ? "-" + digits : digits;
}

}  // namespace

bool apply_key(char key, TopSettings& settings) {
  switch (key) {
    case 'q': case 'Q': return false;
    case 'c': settings.grouping = Grouping::kClass; break;
    case 'l': settings.grouping = Grouping::kSite; break;
    case 'b': settings.grouping = Grouping::kBoth; break;
    case 'n': settings.sort = SortKey::kCount; break;
    case 'B': case 'm': settings.sort = SortKey::kBytes; break;
    case 'g': settings.sort = SortKey::kGrowth; break;
    case 's':
      settings.sort = settings.sort == SortKey::kCount   ? SortKey::kBytes
                      : settings.sort == SortKey::kBytes ? SortKey::kGrowth
                                                         : SortKey::kCount;
      break;
    case ' ': case 'p': settings.paused = !settings.paused; break;
    default: break;
  }
  return true;
}

double allocation_rate(const TopFrame& frame) {
  if (frame.before == nullptr || frame.now->time <= frame.before->time) return 0;
  return static_cast<double>(frame.now->total_allocated - frame.before->total_allocated) /
         (frame.now->time - frame.before->time);
}

std::vector<Row> sorted_rows(const TopFrame& frame, const TopSettings& settings) {
  std::vector<Row> rows = rows_of(*frame.now, frame.before, settings.grouping);
  auto value = [&](const Row& row) -> int64_t {
    switch (settings.sort) {
      case SortKey::kCount: return static_cast<int64_t>(row.count);
      case SortKey::kBytes: return static_cast<int64_t>(row.bytes);
      case SortKey::kGrowth: break;
    }
    return row.growth;
  };
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    int64_t va = value(a), vb = value(b);
    return va != vb ? va > vb : a.key < b.key;
  });
  return rows;
}

double gc_rate(const TopFrame& frame) {
  const double seconds = frame.before != nullptr ? frame.now->time - frame.before->time : 0;
  return seconds > 0 ? static_cast<double>(frame.now->gc_count - frame.before->gc_count) / seconds : 0;
}

LiveTotals live_totals(const TopFrame& frame) {
  LiveTotals totals;
  for (const LiveGroup& group : frame.now->groups) {
    totals.count += group.count;
    totals.bytes += group.bytes;
  }
  return totals;
}

std::vector<std::string> render_top(const TopFrame& frame, const TopSettings& settings,
                                    size_t width, size_t height, size_t max_rows) {
  const auto [live, bytes] = live_totals(frame);
  std::vector<std::string> lines;
  auto add = [&](std::string line) {
    if (line.size() > width) line.resize(width);
    lines.push_back(std::move(line));
  };
  add(fmt::format("memprof top - pid {}{}", frame.pid, settings.paused ? "  [paused]" : ""));
  const double gcs = gc_rate(frame);
  auto [grouping, heading] = grouping_names(shown_grouping(*frame.now, settings.grouping), frame.now->native);
  if (frame.now->native)
    add(fmt::format("malloc family: allocations {}/s  live {} blocks, {}",
                    heap::count_text(static_cast<uint64_t>(allocation_rate(frame))),
                    heap::count_text(live), heap::bytes_text(bytes)));
  else
    add(fmt::format("allocations {}/s  GC {:.1f}/s  live tracked {} objects, {}",
                    heap::count_text(static_cast<uint64_t>(allocation_rate(frame))), gcs,
                    heap::count_text(live), heap::bytes_text(bytes)));
  add(fmt::format("by {}, sorted by {}", grouping, sort_name(settings.sort)));
  if (settings.interactive) add("keys: c/l/b group  n/m/g sort  space pause  q quit");
  constexpr size_t kNumbers = 11 + 1 + 11 + 1 + 10 + 2;
  add(fmt::format("{:>11} {:>11} {:>10}  {}", "LIVE", "BYTES", "GROWTH", heading));
  size_t key_width = width > kNumbers ? width - kNumbers : 1;
  const size_t headers = lines.size();
  for (const Row& row : sorted_rows(frame, settings)) {
    if (lines.size() >= height || lines.size() - headers >= max_rows) break;
    add(fmt::format("{:>11} {:>11} {:>10}  {}", heap::count_text(row.count),
                    heap::bytes_text(row.bytes), signed_count(row.growth),
                    fit_key(row, key_width)));
  }
  return lines;
}

}  // namespace memprof::attach
