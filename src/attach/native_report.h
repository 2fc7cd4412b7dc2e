// The CLI's side of `memprof native`: reading the agent's snapshots (native/native_wire.h) and
// turning call sites (return addresses in the target) into the report a user reads: what is
// still live at the end (leaked), by library and by call site, what was allocated and how much
// of it was temporary, and the peak.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/proc/symbol_index.h"
#include "core/util/result.h"
#include "native/native_session.h"

namespace memprof::attach {

// A snapshot as the agent sent it (native/native_wire.h), in the engine's own types.
struct NativeSnapshotView {
  bool exiting = false;
  std::vector<std::string> problems;
  native::NativeSnapshot snapshot;
};

Result<NativeSnapshotView> parse_native_snapshot(std::string_view json);

// A call site as people read it: "leak_blocks+0x1e (libleaky.so)", and its library's file name.
struct SiteName {
  std::string site;
  std::string library;
};
SiteName name_site(const proc::SymbolIndex& symbols, uint64_t return_address);

struct NativeReportOptions {
  size_t top = 20;
  double seconds = 0;  // how long the session ran
};

std::string native_report_text(const NativeSnapshotView& view, const proc::SymbolIndex& symbols,
                               const NativeReportOptions& options);
// {"seconds", "totals": {...}, "sites": [{"site", "library", "address", counts...}]}, every site.
std::string native_report_json(const NativeSnapshotView& view, const proc::SymbolIndex& symbols,
                               const NativeReportOptions& options);

}  // namespace memprof::attach
