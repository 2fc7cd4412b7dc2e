// One traced thread's state, owned by that thread while it runs: the calls it is inside of
// (a shadow stack of their real return addresses), its ring of finished calls, and its
// per-function counters for `memprof trace -c`. States live in one mmap'ed pool (the hooks
// never call malloc); a thread claims one at its first traced call and the reader gives it
// back once the thread has exited and its ring is drained.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "trace/call_record.h"
#include "trace/record_ring.h"

namespace memprof::tracer {

inline constexpr size_t kMaxFunctions = 4096;
inline constexpr size_t kMaxThreads = 512;
inline constexpr size_t kMaxDepth = 128;      // traced calls nested in one thread
inline constexpr size_t kAbandonedSlots = 64;  // calls presumed left without a return
inline constexpr size_t kRingRecords = 8192;  // ~3.3 MB, touched as records arrive

// A call the thread is inside of. Its record is filled at entry and finished at exit.
struct PendingCall {
  uint64_t* slot;            // where the return address was (the stack slot we rewrote)
  trace::CallRecord record;  // its return_address is what the slot held
};

// A call presumed left by longjmp (a later call found the stack above its slot): kept in case
// it returns after all (a call on another stack, e.g. a signal handler on sigaltstack or a
// fiber), so that its real return address is never lost.
struct AbandonedCall {
  uint64_t* slot = nullptr;
  uint64_t return_address = 0;
};

// No member initializers: a thread state's 4,096 counters start as the zeroed pages of a fresh
// mapping, and are touched only for the functions the thread calls.
struct FunctionCounters {
  uint64_t calls;  // finished calls (returned or unwound)
  uint64_t ticks;  // their durations, summed (tick_clock.h)
};

using CallRing = trace::RecordRing<trace::CallRecord, kRingRecords>;

struct ThreadTrace {
  std::atomic<uint32_t> owned{0};  // 1 while a live thread holds this state
  uint32_t tid = 0;
  bool busy = false;      // inside the tracer: calls made now are not traced
  bool ignored = false;   // a thread of memprof's own agent
  uint32_t depth = 0;
  uint64_t untimed = 0;   // calls seen while the shadow stack was full (counted, not timed)
  uint32_t abandoned_next = 0;
  AbandonedCall abandoned[kAbandonedSlots];
  PendingCall stack[kMaxDepth];  // ~51 KB written when the state is made
  FunctionCounters counters[kMaxFunctions];
  CallRing ring;
};

}  // namespace memprof::tracer
