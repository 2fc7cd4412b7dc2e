// Where a remote call's frame goes on the target thread's stack. Pure arithmetic, shared by the
// caller and the tests that check the bytes are put back.
//
//   rsp (the thread's)          ─┐
//   rsp - 128: red zone          │ untouched: leaf functions keep live data there
//   strings (16-aligned)         │ written, saved and restored
//   entry_rsp: return address 0 ─┘ written, saved and restored; rsp % 16 == 8 as after a call
//   below: the callee's frames (dead stack by the ABI, as for a signal handler)
#pragma once

#include <cstdint>

namespace memprof::inject {

constexpr uint64_t kRedZone = 128;

struct CallFrame {
  uint64_t entry_rsp = 0;       // rsp at the callee's first instruction; holds the return address
  uint64_t strings = 0;         // where the string arguments start
  uint64_t saved_begin = 0;     // [saved_begin, saved_end): the bytes saved and restored
  uint64_t saved_end = 0;
};

// A frame below `rsp` for `string_bytes` bytes of string arguments.
inline CallFrame plan_call_frame(uint64_t rsp, uint64_t string_bytes) {
  CallFrame frame;
  frame.saved_end = rsp - kRedZone;
  frame.strings = (frame.saved_end - string_bytes) & ~uint64_t{15};
  frame.entry_rsp = frame.strings - 8;
  frame.saved_begin = frame.entry_rsp;
  return frame;
}

}  // namespace memprof::inject
