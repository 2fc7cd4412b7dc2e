// Reading the agent's `memprof native` snapshots (native/native_wire.h) into the engine's own
// types, on the CLI's side.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"
#include "native/native_session.h"

namespace memprof::attach {

struct NativeSnapshotView {
  bool exiting = false;
  double exit_gc_ms = -1;  // the collection at a Ruby process's end; negative: none ran
  uint64_t children = 0;   // child processes started since the start, which are not tracked
  std::vector<std::string> problems;
  native::NativeSnapshot snapshot;
};

Result<NativeSnapshotView> parse_native_snapshot(std::string_view json);

}  // namespace memprof::attach
