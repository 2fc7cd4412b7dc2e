#include "native/native_wire.h"

#include <fmt/format.h>

#include "core/util/json_escape.h"

namespace memprof::native {

std::string encode_snapshot(const NativeSnapshot& snapshot, const std::vector<std::string>& problems, bool exiting) {
  std::string out = fmt::format("{{\"exiting\":{},\"problems\":[", exiting);
  for (size_t i = 0; i < problems.size(); ++i) out += (i ? "," : "") + json_quoted(problems[i]);
  const NativeTotals& t = snapshot.totals;
  out += fmt::format(
      "],\"totals\":{{\"allocations\":{},\"allocated_bytes\":{},\"frees\":{},\"freed_bytes\":{},\"temporaries\":{},"
      "\"unknown_frees\":{},\"live_blocks\":{},\"live_bytes\":{},\"peak_live_bytes\":{},\"missed_frees\":{},"
      "\"dropped\":{},\"engine_bytes\":{}}},\"sites\":[",
      t.allocations, t.allocated_bytes, t.frees, t.freed_bytes, t.temporaries, t.unknown_frees, t.live_blocks,
      t.live_bytes, t.peak_live_bytes, t.missed_frees, t.dropped, t.engine_bytes);
  for (size_t i = 0; i < snapshot.sites.size(); ++i) {
    const SiteRow& s = snapshot.sites[i];
    out += fmt::format("{}[{},{},{},{},{},{},{},{},{}]", i ? "," : "", s.return_address, s.allocations,
                       s.allocated_bytes, s.frees, s.freed_bytes, s.temporaries, s.live_blocks, s.live_bytes,
                       s.peak_live_bytes);
  }
  out += "]}";
  return out;
}

}  // namespace memprof::native
