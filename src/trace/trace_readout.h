// The CLI's reading of the agent's trace readouts (src/tracer/trace_wire.h): one JSON line,
// then the call records as raw bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"
#include "trace/call_record.h"

namespace memprof::trace {

struct ReadoutFunction {
  uint32_t id = 0;
  std::string name;
  std::string object;
  bool through_got = false;
};

struct ReadoutTotals {
  uint32_t id = 0;
  uint64_t calls = 0;
  uint64_t nanoseconds = 0;
};

struct Readout {
  std::vector<ReadoutFunction> functions;  // hooked since the previous readout
  std::vector<std::string> problems;
  std::vector<std::string> untraceable;  // functions that matched but cannot be traced, by name
  uint64_t dropped = 0;
  uint64_t untraced = 0;
  uint64_t in_flight = 0;
  bool exiting = false;  // the process is in exit(), waiting for trace-stop
  bool exec = false;     // a thread waits in execve for this readout to be out (agent/exec_watch.h)
  uint64_t children = 0;  // child processes started since the trace started, which are not traced
  std::vector<ReadoutTotals> totals;
  std::vector<CallRecord> records;
};

Result<Readout> parse_readout(std::string_view body);

}  // namespace memprof::trace
