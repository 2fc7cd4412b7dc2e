// Durations on the command line: "10s", "500ms", "2m", or a bare number of seconds.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "core/util/result.h"

namespace memprof::attach {

Result<std::chrono::milliseconds> parse_duration(const std::string& text);

// "500 ms", "10 s", "1.5 s", "120 s": a duration as the output names it, whatever way it was
// written on the command line.
std::string duration_text(std::chrono::milliseconds duration);

// An optional --duration: nothing when `text` is empty.
Result<std::optional<std::chrono::milliseconds>> parse_optional_duration(const std::string& text);
// When a window of `duration` opened now ends: never without one.
std::chrono::steady_clock::time_point deadline_after(std::optional<std::chrono::milliseconds> duration);

}  // namespace memprof::attach
