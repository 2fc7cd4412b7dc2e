#include "trace/trace_output.h"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "core/util/json_escape.h"
#include "core/util/path_name.h"

namespace memprof::trace {
namespace {

FormattedCall formatted(const CallRecord& record, const FunctionInfo& function, const LineOptions& options) {
  CapturedCall call;
  call.arguments = record.arguments;
  call.returned = record.returned;
  FormattedCall text = format_call(
      function.prototype, call,
      [&](uint64_t address, char* out, size_t size) { return read_captured(record, address, out, size); },
      options.format);
  if (record.outcome == CallOutcome::kUnwound) text.return_value = "<unwound>";
  if (record.outcome == CallOutcome::kUnfinished) text.return_value.reset();  // "<unfinished ...>"
  return text;
}

std::string timestamp(uint64_t monotonic_ns, const LineOptions& options) {
  const int64_t wall = static_cast<int64_t>(monotonic_ns) + options.realtime_offset_ns;
  const time_t seconds = static_cast<time_t>(wall / 1000000000);
  const long micros = static_cast<long>(wall % 1000000000 / 1000);
  if (options.timestamps >= 3) return fmt::format("{}.{:06} ", seconds, micros);
  tm local{};
  ::localtime_r(&seconds, &local);
  if (options.timestamps == 2)
    return fmt::format("{:02}:{:02}:{:02}.{:06} ", local.tm_hour, local.tm_min, local.tm_sec, micros);
  return fmt::format("{:02}:{:02}:{:02} ", local.tm_hour, local.tm_min, local.tm_sec);
}

std::string_view ruby_file(const CallRecord& record) {
  return {record.ruby_file, strnlen(record.ruby_file, sizeof(record.ruby_file))};
}

// Why a call has no Ruby line, when the agent knows: "(without the GVL)" (a Ruby thread in a
// blocking region), "(garbage collection)". Empty otherwise.
std::string_view no_line_reason(const CallRecord& record) {
  std::string_view file = ruby_file(record);
  return record.ruby_line == 0 && file.starts_with('(') ? file : std::string_view();
}

}  // namespace

std::string call_line(const CallRecord& record, const FunctionInfo& function, const LineOptions& options) {
  std::string line = options.timestamps > 0 ? timestamp(record.entry_ns, options) : std::string();
  line += fmt::format("[{}] ", record.tid);
  if (record.ruby_line != 0) {
    line += fmt::format("{}:{}: ", ruby_file(record), record.ruby_line);
  } else if (std::string_view reason = no_line_reason(record); !reason.empty()) {
    line += fmt::format("{}: ", reason);
  }
  // ltrace -x's form, `getenv@libc.so.6`: the function and the object that defines it. (Its
  // `libc.so.6->getenv` names the object that made the call, which an entry hook does not.)
  std::string name = function.object.empty() ? function.name : function.name + "@" + std::string(file_name_of(function.object));
  line += call_line(name, formatted(record, function, options));
  // An unwound call's time is not known (the tracer saw it end only at a later call).
  if (options.durations && record.outcome == CallOutcome::kReturned)
    line += fmt::format(" <{}.{:06}>", record.duration_ns / 1000000000, record.duration_ns % 1000000000 / 1000);
  return line;
}

std::string call_json(const CallRecord& record, const FunctionInfo& function, const LineOptions& options) {
  FormattedCall text = formatted(record, function, options);
  const int64_t wall = static_cast<int64_t>(record.entry_ns) + options.realtime_offset_ns;
  return fmt::format(
      R"({{"time":{}.{:06},"tid":{},"object":{},"function":{},"arguments":{},"return":{},"seconds":{},"unwound":{},"unfinished":{},"ruby_caller":{}}})",
      wall / 1000000000, wall % 1000000000 / 1000, record.tid, json_quoted(function.object),
      json_quoted(function.name), json_quoted(text.arguments),
      record.outcome != CallOutcome::kReturned ? "null" : json_quoted(text.return_value.value_or("")),
      record.outcome != CallOutcome::kReturned ? std::string("null")
                                               : fmt::format("{:.9f}", static_cast<double>(record.duration_ns) / 1e9),
      record.outcome == CallOutcome::kUnwound, record.outcome == CallOutcome::kUnfinished,
      record.ruby_line != 0 ? json_quoted(fmt::format("{}:{}", ruby_file(record), record.ruby_line))
      : no_line_reason(record).empty() ? std::string("null")
                                       : json_quoted(no_line_reason(record)));
}

namespace {

// One row per name, the most time first: a function of a library loaded again elsewhere, or of
// the program before an exec, is the same function to the reader.
std::vector<SummaryRow> merged_summary(std::vector<SummaryRow> rows) {
  std::vector<SummaryRow> merged;
  std::unordered_map<std::string, size_t> index;  // name -> its row in `merged`
  for (SummaryRow& row : rows) {
    auto [at, added] = index.try_emplace(row.function, merged.size());
    if (added) {
      merged.push_back(std::move(row));
    } else {
      merged[at->second].calls += row.calls;
      merged[at->second].nanoseconds += row.nanoseconds;
    }
  }
  std::stable_sort(merged.begin(), merged.end(),
                   [](const SummaryRow& a, const SummaryRow& b) { return a.nanoseconds > b.nanoseconds; });
  return merged;
}

}  // namespace

std::string summary_table(std::vector<SummaryRow> rows) {
  rows = merged_summary(std::move(rows));
  uint64_t total_ns = 0, total_calls = 0;
  for (const SummaryRow& row : rows) total_ns += row.nanoseconds, total_calls += row.calls;
  auto seconds = [](uint64_t ns) { return fmt::format("{:4}.{:06}", ns / 1000000000, ns % 1000000000 / 1000); };
  std::string out = "% time     seconds  usecs/call     calls      function\n";
  const std::string rule = "------ ----------- ----------- --------- --------------------\n";
  out += rule;
  for (const SummaryRow& row : rows) {
    double percent = total_ns == 0 ? 0.0 : 100.0 * static_cast<double>(row.nanoseconds) / static_cast<double>(total_ns);
    uint64_t per_call_us = row.calls == 0 ? 0 : row.nanoseconds / row.calls / 1000;
    out += fmt::format("{:6.2f} {} {:11} {:9} {}\n", percent, seconds(row.nanoseconds), per_call_us, row.calls,
                       row.function);
  }
  out += rule;
  out += fmt::format("100.00 {}             {:9} total\n", seconds(total_ns), total_calls);
  return out;
}

std::string summary_json(std::vector<SummaryRow> rows) {
  rows = merged_summary(std::move(rows));
  uint64_t total_ns = 0, total_calls = 0;
  std::string functions;
  for (const SummaryRow& row : rows) {
    total_ns += row.nanoseconds, total_calls += row.calls;
    functions += fmt::format(R"({}{{"function":{},"calls":{},"seconds":{:.9f}}})", functions.empty() ? "" : ",",
                             json_quoted(row.function), row.calls, static_cast<double>(row.nanoseconds) / 1e9);
  }
  return fmt::format(R"({{"summary":[{}],"total":{{"calls":{},"seconds":{:.9f}}}}})", functions, total_calls,
                     static_cast<double>(total_ns) / 1e9) + "\n";
}

}  // namespace memprof::trace
