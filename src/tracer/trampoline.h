// The generic trampoline: one piece of code that traces a call to any function, whatever its
// signature, and the per-thread bookkeeping behind it.
//
// A traced function's entry hook jumps to a small per-function stub (`movabs r11, function;
// jmp trace_entry`). trace_entry saves the argument registers (rdi..r9, rax, r10, xmm0-7),
// calls on_entry, restores them and jumps to the function's relocated prologue, so the
// function sees exactly the registers and stack its caller left. on_entry records the
// arguments and the time and replaces the return address on the stack with trace_exit, keeping
// the real one on the thread's shadow stack. When the function returns, trace_exit saves the
// return registers (rax, rdx, xmm0, xmm1), calls on_exit, which finishes the record and hands
// back the real return address, and returns there.
//
// The return path when a call does not return (docs/trace.md):
// - longjmp (Ruby's raise, siglongjmp): the frame is simply gone. The next traced call of the
//   thread finds the stack pointer at or above the old return slot, reports the old call as
//   unwound and keeps its real return address aside (AbandonedCall) in case the call was on
//   another stack (a signal handler on sigaltstack, a fiber) and does return after all.
// - C++ exceptions and thread cancellation walk return addresses with the unwinder, which
//   knows nothing of trace_exit: hooks on _Unwind_RaiseException and _Unwind_ForcedUnwind put
//   every real return address back into the stack before the walk (the calls are reported as
//   unwound).
// - A tail call from one traced function to another finds trace_exit already in the slot: both
//   calls end at the same return.
// - A thread that exits inside a traced call leaves its state to the reader, which recycles it.
//
// Nothing here allocates with malloc, takes a lock or throws: the hooked code may hold any lock
// (malloc's, the loader's) and may run in a signal handler. Calls made by the tracer itself,
// and by memprof's own threads, are not traced (a per-thread busy flag).
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "core/util/result.h"
#include "trace/call_record.h"
#include "tracer/thread_trace.h"

namespace memprof::tracer {

// One traced function. Never freed: a stub embeds its address and a thread preempted inside
// the stub may run it long after the trace stopped.
struct TracedFunction {
  uintptr_t address = 0;     // the function's entry (0: an event source, event_source())
  const char* event_name = nullptr;  // an event source's name
  void* original = nullptr;  // the callable prologue; set before the hook's jump is written
  void* stub = nullptr;      // the code the hook jumps to
  uint32_t id = 0;           // index in the function table, the records' `function`
  trace::ArgumentCapture capture{};
};

// The function traced at `address`, made on first use (with a stub placed near it); the same
// one for the same address afterwards, so a second trace of it reuses its id.
Result<TracedFunction*> traced_function(uintptr_t address);
// Whether the table of traced functions is full (kMaxFunctions): no new address gets one.
bool traced_function_table_full();
// An id for something traced by other means than a hook (Ruby's GC events): the same one for
// the same name afterwards. `name` is a string literal (kept as it is).
Result<uint32_t> event_source(const char* name);
// Records one call-like event of `source` on the calling thread (from an event callback: no
// allocation, no lock), as if a function had run from `entry` to `exit` (now_ticks(),
// tick_clock.h) with two integer arguments.
void record_event(uint32_t source, uint64_t entry, uint64_t exit, uint64_t argument0, uint64_t argument1);
uint32_t function_count();

// Whether finished calls are pushed as records (off for `-c`: only counters are kept).
void set_recording(bool on);

// Where a traced call came from in the program's own language (--ruby-caller). Called at
// entry on the calling thread: never allocates, never takes a lock, never throws; writes
// the file (NUL-terminated, at most `capacity` bytes) and returns the line, 0 for none.
using CallerSource = uint32_t (*)(char* file, size_t capacity);
void set_caller_source(CallerSource source);  // null: none

// Calls made by this thread are never traced (memprof's own threads).
void ignore_this_thread();

// In a forked child whose trace nobody reads (the agent's children): the hooks, copied with
// the process, only pass calls through from now on (calls in flight still return through the
// exit trampoline). Only an atomic store: safe right after fork.
void stop_tracing_in_child() noexcept;
// A trace of this process starts (undoes stop_tracing_in_child: the child's own trace).
void start_tracing_here() noexcept;

// Runs `body` with the calling thread's tracing suspended (the tracer's own dlopen watch).
class Untraced {
 public:
  Untraced();
  ~Untraced();
  Untraced(const Untraced&) = delete;
  Untraced& operator=(const Untraced&) = delete;

 private:
  bool was_busy_ = false;
};

// Before the unwinder walks this thread's stack (a C++ throw, pthread_exit): the real return
// addresses go back into the stack and the calls are reported as unwound.
void restore_return_addresses();

// Once the entry hooks are gone, waits (20 ms) for a thread that jumped into the trace's entry
// path just before to be through it: the calls in flight are then all counted (calls_in_flight).
void wait_for_calls_being_entered();

// The reader's view of the thread states (only the reader calls these).
uint32_t thread_state_count();
ThreadTrace* thread_state(uint32_t index);
// Calls no state could be claimed for (more than kMaxThreads threads at once).
uint64_t calls_without_state();

}  // namespace memprof::tracer
