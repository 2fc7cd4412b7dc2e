// Where a remote call's frame goes on the target thread's stack. Pure arithmetic, shared by the
// caller and the tests that check the bytes are put back.
//
//   rsp (the thread's)          ─┐
//   rsp - 128: red zone          │ untouched: leaf functions keep live data there
//   strings (16-aligned)         │ written per call, saved and restored
//   XSAVE area (64-aligned)      │ ┐ the signal frame (signal_frame.h): written once,
//   siginfo (the result slot)    │ │ unchanged while the thread is borrowed, so that a
//   ucontext                     │ │ rt_sigreturn at any moment finds the thread's state
//   entry_rsp: return address   ─┘ ┘ (rt_sigframe.pretcode); rsp % 16 == 8 as after a call
//   below: the callee's frames (dead stack by the ABI, as for a signal handler)
//
// The layout is the same for every call of one hijacked thread: string arguments get a fixed
// capacity, so no call moves the signal frame.
#pragma once

#include <cstdint>

namespace memprof::inject {

constexpr uint64_t kRedZone = 128;
// struct rt_sigframe of x86-64 Linux: the return address, a struct ucontext (304 bytes), a
// siginfo (128 bytes); the kernel reads the XSAVE area through a pointer in the ucontext.
constexpr uint64_t kSignalFrameSize = 8 + 304 + 128;
constexpr uint64_t kSiginfoOffset = 8 + 304;
// The XSAVE area is followed by a 4-byte magic word (FP_XSTATE_MAGIC2).
constexpr uint64_t kXsaveMagic2Size = 4;

struct CallFrame {
  uint64_t entry_rsp = 0;       // rsp at the callee's first instruction; holds the return address
  uint64_t xsave = 0;           // the thread's XSAVE area, for rt_sigreturn
  uint64_t strings = 0;         // where the string arguments start
  uint64_t string_capacity = 0;
  uint64_t saved_begin = 0;     // [saved_begin, saved_end): the bytes saved and restored
  uint64_t saved_end = 0;
  // Where the return path stores the callee's rax: the siginfo, which rt_sigreturn ignores.
  uint64_t result_slot() const { return entry_rsp + kSiginfoOffset; }
};

// A frame below `rsp` for up to `string_capacity` bytes of string arguments and an XSAVE area
// of `xsave_size` bytes.
inline CallFrame plan_call_frame(uint64_t rsp, uint64_t string_capacity, uint64_t xsave_size) {
  CallFrame frame;
  frame.saved_end = rsp - kRedZone;
  frame.string_capacity = string_capacity;
  frame.strings = (frame.saved_end - string_capacity) & ~uint64_t{15};
  frame.xsave = (frame.strings - xsave_size - kXsaveMagic2Size) & ~uint64_t{63};
  frame.entry_rsp = ((frame.xsave - kSignalFrameSize) & ~uint64_t{15}) - 8;
  frame.saved_begin = frame.entry_rsp;
  return frame;
}

}  // namespace memprof::inject
