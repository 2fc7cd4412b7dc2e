// What the tracer inside the target hands to `memprof trace` for one finished call, byte for
// byte (the agent sends records as they are in memory; both sides are this build, x86-64).
//
// A hook cannot know at entry whether a pointer will still be valid when the CLI formats the
// call, so it copies what the prototype says the pointers point to (ArgumentCapture), at most
// kCapturedArguments of them, kCaptureBytes each; call_format's MemoryReader is then served
// from these copies (CapturedMemory) instead of the process.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "trace/captured_call.h"

namespace memprof::trace {

inline constexpr size_t kCapturedArguments = 3;
// The end of the Ruby file name kept for --ruby-caller ("...app/models/user.rb").
inline constexpr size_t kRubyFileBytes = 64;
inline constexpr size_t kCaptureBytes = 48;
// The longest string shown whole: one captured byte beyond it tells whether "..." is due.
inline constexpr size_t kLongestStringLimit = kCaptureBytes - 2;

// What the hook copies for each integer argument register (rdi..r9).
enum class Capture : uint8_t {
  kNothing = 0,
  kString = 1,  // a NUL-terminated string, up to kCaptureBytes - 1 bytes of it
  kBytes = 2,   // kCaptureBytes raw bytes (a T* argument's T, a counted buffer)
  // The same, copied when the call returns: an output parameter ('+' in a prototype), which
  // at the call holds whatever the caller's buffer held before (snprintf's destination).
  kStringAtReturn = 3,
  kBytesAtReturn = 4,
};
// One per integer argument register (rdi..r9), then one for the returned value (rax: a
// prototype's `string` result, copied when the call returns, as getenv's).
inline constexpr size_t kReturnValue = 6;
using ArgumentCapture = std::array<Capture, kReturnValue + 1>;

inline bool captured_at_return(Capture capture) {
  return capture == Capture::kStringAtReturn || capture == Capture::kBytesAtReturn;
}

enum class CallOutcome : uint8_t {
  kReturned = 0,
  // Left without returning: longjmp, a C++ exception, pthread_exit. duration_ns is how long
  // the call had run when the tracer found it gone (an upper bound is not known).
  kUnwound = 1,
  // Not returned when the trace stopped (blocked, or an execve that replaced the program):
  // entry_ns and the arguments only.
  kUnfinished = 2,
};

struct CapturedBytes {
  uint8_t argument = 0xff;  // index of the integer register argument, kReturnValue, 0xff: unused
  uint8_t length = 0;       // bytes valid in `bytes`
  bool terminated = false;  // kString: the NUL was within the copy (bytes[length] == 0)
  char bytes[kCaptureBytes];
};

struct CallRecord {
  uint32_t function = 0;     // the tracer's index of the traced function
  uint32_t tid = 0;
  // CLOCK_MONOTONIC nanoseconds as the CLI receives them; inside the target the tracer keeps
  // clock ticks here until its reader converts them (src/tracer/tick_clock.h).
  uint64_t entry_ns = 0;
  uint64_t duration_ns = 0;
  uint64_t return_address = 0;  // where the call returns to: names the calling object
  ArgumentRegisters arguments;
  ReturnRegisters returned;
  CallOutcome outcome = CallOutcome::kReturned;
  std::array<CapturedBytes, kCapturedArguments> captured;
  // --ruby-caller: the Ruby file and line running on the calling thread (line 0: none, the
  // thread is not Ruby's or runs no Ruby code). A longer path keeps its end, after "...".
  uint32_t ruby_line = 0;
  char ruby_file[kRubyFileBytes] = {};
};

// The memory a formatter may read for one record: the captured copies at the addresses the
// arguments held; everything else is unreadable (shown as an address).
inline size_t read_captured(const CallRecord& record, uint64_t address, char* out, size_t size) {
  for (const CapturedBytes& copy : record.captured) {
    if (copy.argument > kReturnValue) continue;
    uint64_t start = copy.argument == kReturnValue ? record.returned.integer
                                                   : record.arguments.integer[copy.argument];
    // The NUL counts as readable: it ends the string the formatter reads.
    uint64_t end = start + copy.length + (copy.terminated ? 1 : 0);
    if (address < start || address >= end) continue;
    size_t n = static_cast<size_t>(end - address) < size ? static_cast<size_t>(end - address) : size;
    std::memcpy(out, copy.bytes + (address - start), n);
    return n;
  }
  return 0;
}

}  // namespace memprof::trace
