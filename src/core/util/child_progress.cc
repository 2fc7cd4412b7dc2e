#include "core/util/child_progress.h"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <charconv>
#include <string_view>

#include <fmt/format.h>

#include "core/util/proc_file.h"

namespace memprof {

namespace {

// The `index`-th space-separated field after "PID (COMM) ", counting the state as field 0.
std::optional<uint64_t> stat_number(std::string_view fields, size_t index) {
  for (size_t i = 0; i < index; ++i) {
    size_t space = fields.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    fields.remove_prefix(space + 1);
  }
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(fields.data(), fields.data() + fields.size(), value);
  if (ec != std::errc() || end == fields.data()) return std::nullopt;
  return value;
}

// The number after `key` ("rchar: ") in a /proc/PID/io text; 0 when absent.
uint64_t io_field(std::string_view io, std::string_view key) {
  size_t at = io.find(key);
  if (at == std::string_view::npos) return 0;
  io.remove_prefix(at + key.size());
  uint64_t value = 0;
  std::from_chars(io.data(), io.data() + io.size(), value);
  return value;
}

}  // namespace

std::optional<ChildProgress> read_child_progress(pid_t pid) {
  auto stat = read_proc_file(fmt::format("/proc/{}/stat", pid));
  if (!stat.ok()) return std::nullopt;
  // "PID (COMM) STATE ...": COMM may hold spaces and parentheses, the last ')' ends it. After
  // it, field 0 is the state and fields 11 and 12 are utime and stime (proc(5): 14 and 15).
  size_t close = stat->rfind(')');
  if (close == std::string::npos || close + 2 >= stat->size()) return std::nullopt;
  std::string_view fields = std::string_view(*stat).substr(close + 2);
  auto utime = stat_number(fields, 11);
  auto stime = stat_number(fields, 12);
  if (!utime || !stime) return std::nullopt;

  ChildProgress progress;
  progress.state = fields[0];
  progress.cpu_ticks = *utime + *stime;
  if (auto io = read_proc_file(fmt::format("/proc/{}/io", pid)); io.ok())
    progress.io_bytes = io_field(*io, "rchar: ") + io_field(*io, "wchar: ");
  if (auto wchan = read_proc_file(fmt::format("/proc/{}/wchan", pid)); wchan.ok() && *wchan != "0")
    progress.wchan = wchan->substr(0, wchan->find('.'));  // without ".constprop.0", ".isra.0"
  return progress;
}

bool StallWatch::stalled(const ChildProgress& sample, std::chrono::steady_clock::time_point now) {
  bool same = last_ && sample.state == 'S' && last_->state == 'S' &&
              sample.cpu_ticks == last_->cpu_ticks && sample.io_bytes == last_->io_bytes;
  if (!same) still_since_ = now;
  last_ = sample;
  return now - still_since_ >= limit_;
}

std::string StallWatch::describe(const ChildProgress& stalled_sample) const {
  return fmt::format("made no progress for {} s ({}, no CPU time and no I/O)",
                     std::chrono::duration<double>(limit_).count(), describe_state(stalled_sample));
}

std::string describe_state(const ChildProgress& progress) {
  switch (progress.state) {
    case 'S':
      return progress.wchan.empty() ? "asleep" : fmt::format("asleep in {}", progress.wchan);
    case 'D': return "waiting for the disk";
    case 'T':
    case 't': return "stopped";
    case 'R': return "running";
    default: return fmt::format("in state {}", progress.state);
  }
}

void kill_and_reap(pid_t pid) noexcept {
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, __WALL) < 0 && errno == EINTR) {
  }
}

}  // namespace memprof
