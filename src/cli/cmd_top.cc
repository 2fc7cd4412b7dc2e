// memprof top -p PID: a live view of an attached process's allocations, refreshed every second.
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <thread>

#include "attach/duration.h"
#include "attach/interruption.h"
#include "attach/live_snapshot.h"
#include "attach/native_live.h"
#include "attach/process_tree.h"
#include "attach/top_screen.h"
#include "cli/command.h"
#include "cli/process_tree_command.h"
#include "core/util/print_stderr.h"
#include "heap/json_writer.h"

namespace memprof::cli {
namespace {

struct TopOptions {
  pid_t pid = 0;
  bool children = false;
  bool once = false;
  bool json = false;
  bool native = false;
  std::string interval = "1s";
  std::string group = "both";
  std::string sort = "count";
  size_t rows = 0;
};

// Raw keys, no echo, the alternate screen; all put back on every exit path.
class TerminalSession {
 public:
  TerminalSession() {
    active_ = ::tcgetattr(STDIN_FILENO, &saved_) == 0;
    if (!active_) return;
    termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    // The screen is written as it should appear: its "\r\n" left alone (with output
    // processing on, each became "\r\r\n", and a captured session showed doubled returns).
    raw.c_oflag &= ~static_cast<tcflag_t>(OPOST);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    ::tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    fmt::print("\x1b[?1049h\x1b[?25l");
    std::fflush(stdout);
  }
  ~TerminalSession() {
    fmt::print("\x1b[?25h\x1b[?1049l");
    std::fflush(stdout);
    if (active_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  TerminalSession(const TerminalSession&) = delete;
  TerminalSession& operator=(const TerminalSession&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

std::pair<size_t, size_t> terminal_size() {
  winsize size{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0 && size.ws_row > 0)
    return {size.ws_col, size.ws_row};
  return {80, 24};
}

std::string frame_json(const attach::TopFrame& frame, const attach::TopSettings& settings,
                       size_t limit) {
  heap::JsonWriter json;
  json.begin_object();
  json.field("pid", static_cast<uint64_t>(frame.pid));
  json.key("allocations_per_second");
  json.raw(fmt::format("{:.1f}", attach::allocation_rate(frame)));
  // The screen's header line: GC rate (Ruby) and what is live in all.
  if (!frame.now->native) {
    json.key("gc_per_second");
    json.raw(fmt::format("{:.1f}", attach::gc_rate(frame)));
  }
  const attach::LiveTotals totals = attach::live_totals(frame);
  json.field("live", totals.count);
  json.field("live_bytes", totals.bytes);
  json.key("rows");
  json.begin_array();
  size_t shown = 0;
  for (const attach::Row& row : attach::sorted_rows(frame, settings)) {
    if (limit != 0 && shown++ == limit) break;
    json.begin_object();
    json.field("key", row.key);
    json.field("live", row.count);
    json.field("bytes", row.bytes);
    json.key("growth");
    json.raw(std::to_string(row.growth));
    json.end_object();
  }
  json.end_array();
  json.end_object();
  return json.str();
}

Result<attach::TopSettings> settings_of(const TopOptions& options) {
  attach::TopSettings settings;
  if (options.group == "class") settings.grouping = attach::Grouping::kClass;
  else if (options.group == "line") settings.grouping = attach::Grouping::kSite;
  else if (options.group != "both") return err("--group: class, line or both");
  if (options.sort == "bytes") settings.sort = attach::SortKey::kBytes;
  else if (options.sort == "growth") settings.sort = attach::SortKey::kGrowth;
  else if (options.sort != "count") return err("--sort: count, bytes or growth");
  return settings;
}

// Waits up to `interval` for a key; false when the user quits.
bool read_keys(std::chrono::milliseconds interval, attach::TopSettings& settings, bool& changed) {
  auto deadline = std::chrono::steady_clock::now() + interval;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || attach::Interruption::requested())
      return !attach::Interruption::requested();
    pollfd input{STDIN_FILENO, POLLIN, 0};
    if (::poll(&input, 1, static_cast<int>(left.count())) <= 0) continue;
    char key = 0;
    if (::read(STDIN_FILENO, &key, 1) != 1) continue;
    if (!attach::apply_key(key, settings)) return false;
    changed = true;
    return true;
  }
}

// One reading: the tracked Ruby objects of the processes, or (--native) their malloc blocks.
using Reader = std::function<Result<attach::LiveSnapshot>()>;

// The full-screen view until q or Ctrl-C; an error message, or empty.
std::string run_screen(const std::vector<pid_t>& pids, const Reader& read, std::chrono::milliseconds interval,
                       attach::TopSettings settings, attach::LiveSnapshot before) {
  settings.interactive = true;
  attach::Interruption interruption;
  TerminalSession terminal;
  attach::LiveSnapshot now = before;
  bool first_frame = true;
  for (;;) {
    auto [width, height] = terminal_size();
    attach::TopFrame frame{pids.front(), &now, first_frame ? nullptr : &before};
    std::string screen = "\x1b[H\x1b[2J";
    for (const std::string& line : attach::render_top(frame, settings, width, height - 1))
      screen += line + "\r\n";
    fmt::print("{}", screen);
    std::fflush(stdout);
    bool changed = false;
    if (!read_keys(interval, settings, changed)) return {};
    if (changed || settings.paused) continue;  // redraw at once with the same readings
    auto next = read();
    if (!next.ok()) return next.message();
    before = std::move(now);
    now = std::move(*next);
    first_frame = false;
  }
}

int run_top(const TopOptions& options) {
  auto interval = attach::parse_duration(options.interval);
  if (!interval.ok()) return fail(interval.message());
  auto settings = settings_of(options);
  if (!settings.ok()) return fail(settings.message());
  // Before any reading (or --native's session): without a terminal the answer was a reading's
  // error or this one, by timing.
  const bool full_screen = !options.once && !options.json;
  if (full_screen && (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO)))
    return fail("top needs a terminal; use --once or --json in scripts");
  std::vector<pid_t> pids = attach::targets(options.pid, options.children);
  Reader read = [&pids] { return attach::read_snapshot(pids); };
  std::unique_ptr<attach::NativeLiveSource> native;  // stops its session when top ends
  if (options.native) {
    if (options.children) return fail("--native reads one process: it cannot be used with --children");
    auto started = attach::NativeLiveSource::start(options.pid);
    if (!started.ok()) return fail(started.message());
    native = std::move(*started);
    read = [&native] { return native->read(); };
  }
  auto first = read();
  if (!first.ok()) return fail(first.message());
  if (full_screen) {
    std::string error = run_screen(pids, read, *interval, *settings, std::move(*first));
    return error.empty() ? 0 : fail(error);
  }
  if (native) print_stderr("memprof: tracking the malloc family in process {}\n", options.pid);
  // Rates need two readings: one interval apart.
  std::this_thread::sleep_for(*interval);
  auto now = read();
  if (!now.ok()) return fail(now.message());
  LeftOutNotes().say(now->left_out);
  attach::TopFrame frame{options.pid, &*now, &*first};
  if (options.json) {
    fmt::print("{}\n", frame_json(frame, *settings, options.rows));
    return 0;
  }
  auto [width, height] = terminal_size();
  const size_t lines = options.rows != 0 ? SIZE_MAX : std::max<size_t>(height - 1, 6);
  const size_t rows = options.rows != 0 ? options.rows : SIZE_MAX;
  for (const std::string& line : attach::render_top(frame, *settings, width, lines, rows))
    fmt::print("{}\n", line);
  return 0;
}

MEMPROF_COMMAND(
    "top", "Live view of an attached process's allocations by class and file:line",
    [](CLI::App& sub) -> std::function<int()> {
      auto options = std::make_shared<TopOptions>();
      add_pid_option(sub, options->pid, "Attached process")->required();
      sub.add_flag("--once", options->once, "Print one frame (two readings, --interval apart)");
      sub.add_flag("--children", options->children,
                   "Add up the process and all its descendants (workers)");
      sub.add_flag("--json", options->json, "Print one frame as JSON");
      sub.add_flag("--native", options->native,
                    "Malloc-family blocks instead of Ruby objects (as memprof native): by call site "
                    "(c), Ruby line (l) or both (b); tracking starts now and stops when top ends");
      sub.add_option("--interval", options->interval, "Refresh interval (default 1s)");
      sub.add_option("--group", options->group, "class, line or both (default both)");
      sub.add_option("--sort", options->sort, "count, bytes or growth (default count)");
      add_count_option(sub, "--rows", options->rows, "Rows with --once/--json (default: the screen)");
      sub.footer(
          "Rows are groups of live tracked objects: LIVE objects, their BYTES (memsize), and\n"
          "their GROWTH since the previous refresh. The header shows objects allocated per\n"
          "second (all of them, from Ruby's own counter) and GCs per second.\n"
          "Keys: c class, l file:line, b both; n count, m bytes, g growth, s cycle;\n"
          "space pause; q quit.\n"
          "--native: rows are malloc blocks allocated since top started and still live, by\n"
          "call site and Ruby line; GROWTH is blocks since the previous refresh.");
      return [options] { return run_top(*options); };
    });

}  // namespace
}  // namespace memprof::cli
