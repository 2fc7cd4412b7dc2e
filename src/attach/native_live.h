// `memprof top -p PID --native`: a native session (native/native_wire.h) read every refresh as
// the live snapshots top already draws (live_snapshot.h): a group is a Ruby line and a call
// site, its count the blocks live there, its bytes their bytes. The session starts with the
// source and stops (every patched byte restored) when the source goes.
#pragma once

#include <sys/types.h>

#include <memory>

#include "attach/live_snapshot.h"
#include "attach/native_snapshot_json.h"
#include "core/proc/symbol_index.h"

namespace memprof::attach {

class NativeLiveSource {
 public:
  // Injects the agent if needed and starts tracking (call sites and Ruby lines, no stacks).
  static Result<std::unique_ptr<NativeLiveSource>> start(pid_t pid);
  ~NativeLiveSource();
  NativeLiveSource(const NativeLiveSource&) = delete;
  NativeLiveSource& operator=(const NativeLiveSource&) = delete;

  Result<LiveSnapshot> read();

 private:
  explicit NativeLiveSource(pid_t pid);
  pid_t pid_;
  proc::SymbolIndex symbols_;
};

// A snapshot's sites as top's groups: file and line of the Ruby line (line -1 and "(no Ruby
// line)" without one), the call site as the "class", live blocks and bytes.
LiveSnapshot live_snapshot_of(const native::NativeSnapshot& snapshot, const proc::SymbolIndex& symbols, double time);

}  // namespace memprof::attach
