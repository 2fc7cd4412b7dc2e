// The bodies of the agent's trace and native requests: lines of "key value" (value possibly
// empty), split once here for both decoders (tracer/trace_wire.h, native/native_wire.h).
#pragma once

#include <string_view>

#include "core/util/result.h"

namespace memprof {

// Calls visit(key, value, line) for every non-empty line of `body`, until one returns an error.
template <typename Visit>
Status for_each_request_line(std::string_view body, Visit visit) {
  while (!body.empty()) {
    size_t end = body.find('\n');
    std::string_view line = body.substr(0, end);
    body = end == std::string_view::npos ? std::string_view() : body.substr(end + 1);
    if (line.empty()) continue;
    size_t space = line.find(' ');
    std::string_view key = line.substr(0, space);
    std::string_view value = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
    MEMPROF_TRY_STATUS(visit(key, value, line));
  }
  return ok_status();
}

}  // namespace memprof
