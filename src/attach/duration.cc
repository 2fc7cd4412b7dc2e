#include "attach/duration.h"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace memprof::attach {

Result<std::chrono::milliseconds> parse_duration(const std::string& text) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  std::string unit(end);
  double scale = unit.empty() || unit == "s" ? 1000
                 : unit == "ms"                ? 1
                 : unit == "m"                 ? 60'000
                 : unit == "h"                 ? 3'600'000
                                               : -1;
  if (end == text.c_str() || scale < 0 || !std::isfinite(value) || value < 0)
    return err("'{}' is not a duration (e.g. 500ms, 10s, 2m, 1h)", text);
  // Every duration times a wait or a window: none of zero, and none too long to count in
  // milliseconds or to add to the clock.
  double ms = value * scale;
  if (ms < 1) return err("'{}' is too short: a duration is at least 1ms", text);
  constexpr double kLongestMs = 365.0 * 24 * 3'600'000;
  if (ms > kLongestMs) return err("'{}' is too long: a duration is at most a year (8760h)", text);
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

std::string duration_text(std::chrono::milliseconds duration) {
  const int64_t ms = duration.count();
  if (ms < 1000) return fmt::format("{} ms", ms);
  std::string seconds = fmt::format("{}.{:03}", ms / 1000, ms % 1000);
  seconds.erase(seconds.find_last_not_of('0') + 1);  // "1.500" -> "1.5", "10.000" -> "10."
  if (seconds.back() == '.') seconds.pop_back();
  return seconds + " s";
}

Result<std::optional<std::chrono::milliseconds>> parse_optional_duration(const std::string& text) {
  if (text.empty()) return std::optional<std::chrono::milliseconds>();
  MEMPROF_TRY(duration, parse_duration(text));
  return std::optional<std::chrono::milliseconds>(duration);
}

std::chrono::steady_clock::time_point deadline_after(std::optional<std::chrono::milliseconds> duration) {
  return duration ? std::chrono::steady_clock::now() + *duration : std::chrono::steady_clock::time_point::max();
}

}  // namespace memprof::attach
