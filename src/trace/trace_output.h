// What `memprof trace` prints: one line per call as ltrace -ttT prints it, or one JSON object
// per call, and ltrace -c's summary table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/call_format.h"
#include "trace/call_record.h"
#include "trace/prototype.h"

namespace memprof::trace {

struct FunctionInfo {
  std::string name;
  std::string object;                    // the defining object's path
  const Prototype* prototype = nullptr;  // none: ltrace's guess (hex arguments)
};

struct LineOptions {
  int timestamps = 0;      // 0 none, 1 -t (HH:MM:SS), 2 -tt (+ microseconds), 3 -ttt (epoch seconds)
  bool durations = false;  // -T: " <seconds>" after the call
  FormatOptions format;
  // CLOCK_REALTIME minus CLOCK_MONOTONIC: records carry monotonic times.
  int64_t realtime_offset_ns = 0;
};

// "12:01:02.123456 [4242] sqlite3_prepare_v2@libsqlite3.so.0(0x5612..., "SELECT ...", -1, ...) = 0 <0.000041>",
// with "app.rb:12: " after the thread when the record has a Ruby caller.
std::string call_line(const CallRecord& record, const FunctionInfo& function, const LineOptions& options);
// {"time", "tid", "object", "function", "arguments", "return", "seconds", "unwound", "ruby_caller"};
// an unwound call has no return value and no duration (null).
std::string call_json(const CallRecord& record, const FunctionInfo& function, const LineOptions& options);

struct SummaryRow {
  std::string function;
  uint64_t calls = 0;
  uint64_t nanoseconds = 0;
};

// ltrace -c's table: one row per function name (rows with the same name are added up), the most
// time first, with a total line.
std::string summary_table(std::vector<SummaryRow> rows);
// The same for --json, one line: {"summary":[{"function","calls","seconds"}, ...],
// "total":{"calls","seconds"}}.
std::string summary_json(std::vector<SummaryRow> rows);

}  // namespace memprof::trace
