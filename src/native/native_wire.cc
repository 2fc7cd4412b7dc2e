#include "native/native_wire.h"

#include <fmt/format.h>

#include <charconv>

#include "core/util/json_escape.h"
#include "core/util/request_lines.h"

namespace memprof::native {

std::string encode_native_request(const NativeRequest& request) {
  return fmt::format("stack_depth {}\nruby_lines {}\nmmap {}\ngc_at_exit {}\n", request.stack_depth,
                     request.ruby_lines ? 1 : 0, request.track_mmap ? 1 : 0, request.gc_at_exit ? 1 : 0);
}

Result<NativeRequest> decode_native_request(std::string_view body) {
  NativeRequest request;
  MEMPROF_TRY_STATUS(for_each_request_line(body, [&](std::string_view key, std::string_view value,
                                                     std::string_view line) -> Status {
    if (key == "stack_depth") {
      auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), request.stack_depth);
      if (error != std::errc() || end != value.data() + value.size())
        return err("malformed native request line '{}'", line);
    } else if (key == "ruby_lines") {
      request.ruby_lines = value != "0";
    } else if (key == "mmap") {
      request.track_mmap = value != "0";
    } else if (key == "gc_at_exit") {
      request.gc_at_exit = value != "0";
    } else {
      return err("malformed native request line '{}'", line);
    }
    return ok_status();
  }));
  return request;
}

std::string encode_snapshot(const NativeSnapshot& snapshot, const std::vector<std::string>& problems, bool exiting,
                            double exit_gc_ms, uint64_t children) {
  std::string out = fmt::format("{{\"exiting\":{},\"children\":{},", exiting, children);
  if (exit_gc_ms >= 0) out += fmt::format("\"exit_gc_ms\":{:.1f},", exit_gc_ms);
  out += "\"problems\":[";
  for (size_t i = 0; i < problems.size(); ++i) out += (i ? "," : "") + json_quoted(problems[i]);
  const NativeTotals& t = snapshot.totals;
  out += fmt::format(
      "],\"totals\":{{\"allocations\":{},\"allocated_bytes\":{},\"frees\":{},\"freed_bytes\":{},\"temporaries\":{},"
      "\"unknown_frees\":{},\"live_blocks\":{},\"live_bytes\":{},\"peak_live_bytes\":{},\"missed_frees\":{},"
      "\"dropped\":{},\"engine_bytes\":{}}},\"ruby_files\":[",
      t.allocations, t.allocated_bytes, t.frees, t.freed_bytes, t.temporaries, t.unknown_frees, t.live_blocks,
      t.live_bytes, t.peak_live_bytes, t.missed_frees, t.dropped, t.engine_bytes);
  // Ruby file names are the program's bytes, not always UTF-8.
  for (size_t i = 0; i < snapshot.ruby_files.size(); ++i)
    out += (i ? "," : "") + json_quoted_bytes(snapshot.ruby_files[i]);
  out += "],\"sites\":[";
  for (size_t i = 0; i < snapshot.sites.size(); ++i) {
    const SiteRow& s = snapshot.sites[i];
    out += fmt::format("{}[{},{},{},{},{},{},{},{},{},{},{},[{}]]", i ? "," : "", s.return_address, s.allocations,
                       s.allocated_bytes, s.frees, s.freed_bytes, s.temporaries, s.live_blocks, s.live_bytes,
                       s.peak_live_bytes, s.ruby_file, s.ruby_line, fmt::join(s.frames, ","));
  }
  out += "]}";
  return out;
}

}  // namespace memprof::native
