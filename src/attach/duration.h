// Durations on the command line: "10s", "500ms", "2m", or a bare number of seconds.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "core/util/result.h"

namespace memprof::attach {

Result<std::chrono::milliseconds> parse_duration(const std::string& text);

// An optional --duration: nothing when `text` is empty.
Result<std::optional<std::chrono::milliseconds>> parse_optional_duration(const std::string& text);
// When a window of `duration` opened now ends: never without one.
std::chrono::steady_clock::time_point deadline_after(std::optional<std::chrono::milliseconds> duration);

}  // namespace memprof::attach
