// Durations on the command line: "10s", "500ms", "2m", or a bare number of seconds.
#pragma once

#include <chrono>
#include <string>

#include "core/util/result.h"

namespace memprof::attach {

Result<std::chrono::milliseconds> parse_duration(const std::string& text);

}  // namespace memprof::attach
