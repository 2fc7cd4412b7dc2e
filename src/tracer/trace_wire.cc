#include "tracer/trace_wire.h"

#include <fmt/format.h>

#include "core/util/json_escape.h"
#include "core/util/request_lines.h"

namespace memprof::tracer {
namespace {

constexpr std::string_view kCaptureLetters = "-sbSB";  // indexed by trace::Capture

}  // namespace

std::string encode_trace_request(const TraceRequest& request) {
  std::string body = fmt::format("records {}\nruby_caller {}\nverbose {}\n", request.records ? 1 : 0,
                                 request.ruby_caller ? 1 : 0, request.verbose ? 1 : 0);
  for (const auto& pattern : request.patterns) body += "x " + pattern + "\n";
  for (const auto& library : request.libraries) body += "l " + library + "\n";
  for (const auto& [name, capture] : request.captures) {
    std::string kinds;
    for (trace::Capture kind : capture) kinds += kCaptureLetters[static_cast<size_t>(kind)];
    body += "capture " + name + " " + kinds + "\n";
  }
  return body;
}

Result<TraceRequest> decode_trace_request(std::string_view body) {
  TraceRequest request;
  MEMPROF_TRY_STATUS(for_each_request_line(body, [&](std::string_view key, std::string_view value,
                                                     std::string_view line) -> Status {
    if (line.find(' ') == std::string_view::npos) return err("malformed trace request line '{}'", line);
    if (key == "records") {
      request.records = value != "0";
    } else if (key == "ruby_caller") {
      request.ruby_caller = value != "0";
    } else if (key == "verbose") {
      request.verbose = value != "0";
    } else if (key == "x") {
      request.patterns.emplace_back(value);
    } else if (key == "l") {
      request.libraries.emplace_back(value);
    } else if (key == "capture") {
      size_t split = value.rfind(' ');
      trace::ArgumentCapture capture{};
      if (split == std::string_view::npos || value.size() - split - 1 != capture.size())
        return err("malformed capture line '{}'", line);
      for (size_t i = 0; i < capture.size(); ++i) {
        size_t kind = kCaptureLetters.find(value[split + 1 + i]);
        if (kind == std::string_view::npos) return err("malformed capture line '{}'", line);
        capture[i] = static_cast<trace::Capture>(kind);
      }
      request.captures.emplace(std::string(value.substr(0, split)), capture);
    } else {
      return err("unknown trace request line '{}'", line);
    }
    return ok_status();
  }));
  return request;
}

std::string encode_readout(const TraceReadout& readout, const std::vector<HookedFunction>& functions,
                           const std::vector<FunctionTotals>& totals, uint64_t in_flight) {
  std::string out = "{\"functions\":[";
  for (size_t i = 0; i < functions.size(); ++i) {
    const HookedFunction& f = functions[i];
    out += fmt::format("{}{{\"id\":{},\"name\":{},\"object\":{},\"address\":{},\"got\":{}}}", i ? "," : "",
                       f.id, json_quoted(f.name), json_quoted(f.object), f.address, f.through_got);
  }
  out += "],\"problems\":[";
  for (size_t i = 0; i < readout.problems.size(); ++i)
    out += (i ? "," : "") + json_quoted(readout.problems[i]);
  out += "],\"untraceable\":[";
  for (size_t i = 0; i < readout.untraceable.size(); ++i)
    out += (i ? "," : "") + json_quoted(readout.untraceable[i]);
  out += fmt::format("],\"dropped\":{},\"untraced\":{},\"in_flight\":{},\"exiting\":{},\"exec\":{},\"children\":{},"
                     "\"records\":{},\"totals\":[",
                     readout.dropped, readout.untraced, in_flight, readout.process_exiting, readout.exec_waiting,
                     readout.children, readout.records.size());
  for (size_t i = 0; i < totals.size(); ++i)
    out += fmt::format("{}[{},{},{}]", i ? "," : "", totals[i].id, totals[i].calls, totals[i].nanoseconds);
  out += "]}\n";
  out.append(reinterpret_cast<const char*>(readout.records.data()),
             readout.records.size() * sizeof(trace::CallRecord));
  return out;
}

}  // namespace memprof::tracer
