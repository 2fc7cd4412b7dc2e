// The stack above an allocator call, for sites deeper than the caller alone.
//
// libunwind's unw_backtrace (with its per-thread cache of frame kinds): 140-170 ns for 16
// frames here, where libgcc's _Unwind_Backtrace parses the unwind tables anew on every call
// (1.6 us) and frame pointers are cheapest (21 ns) but wrong on Debian's libraries, which are
// built without them (bench/native, docs/native.md). libunwind is opened with dlopen and
// RTLD_LOCAL at the start of a session that asks for stacks: linked normally, its own
// _Unwind_Backtrace and backtrace() would take the place of libgcc's and glibc's in the
// profiled program (its exported definitions come first); kept local, nothing else changes.
//
// Without libunwind, glibc's backtrace() (libgcc's unwinder, ~2.5 us) still finds the frame
// outside the C runtime for the few allocations made inside it (runtime_code.h).
#pragma once

#include <cstdint>

#include "core/util/result.h"
#include "native/site_key.h"

namespace memprof::native {

class StackUnwinder {
 public:
  // Frames one capture returns at most: a stack of kMaxStackDepth above the runtime's own.
  static constexpr uint32_t kMaxFrames = kMaxStackDepth + 16;

  // Opens libunwind (once per process; it stays loaded: threads may still be inside it).
  static Result<StackUnwinder> open();
  // libunwind, or else glibc's backtrace(); either warmed up here, outside any hook.
  static Result<StackUnwinder> open_any();

  // frames[0] = `caller` (the allocator's return address), then the return addresses of the
  // frames above it, up to `max_depth` (at most kMaxFrames) in all. Returns the depth (at least
  // 1). Called inside a hook: the unwinder's own allocations go to the original allocator (the
  // thread's guard is up).
  uint32_t capture(uintptr_t caller, uintptr_t* frames, uint32_t max_depth) const noexcept;

 private:
  using Backtrace = int (*)(void** buffer, int size);
  explicit StackUnwinder(Backtrace backtrace) : backtrace_(backtrace) {}
  Backtrace backtrace_;
};

}  // namespace memprof::native
