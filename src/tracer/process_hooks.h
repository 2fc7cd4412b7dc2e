// The hooks a trace needs besides the traced functions themselves, one set per process:
// - dlopen: after it returns, the running session hooks the matching functions of the objects
//   it loaded (a `require "sqlite3"` after the trace began is traced from its first call);
// - dlclose: after it returns, the session forgets the objects it unloaded, so that one loaded
//   again (often at the same address) is hooked again;
// - _Unwind_RaiseException and _Unwind_ForcedUnwind (libgcc_s): before the unwinder walks a
//   thread's stack, the real return addresses go back into it (trampoline.h).
//
// The unwinder hooks outlive a session while traced calls are still in flight anywhere (a
// thread blocked in a traced read()): an exception through such a call would otherwise meet
// trace_exit's address. They are removed by the first release that finds no call in flight.
#pragma once

#include "core/util/result.h"

namespace memprof::tracer {

class TraceSession;

// Makes `session` the one dlopen and dlclose report to and hooks them and the unwinder.
Status watch_process_for(TraceSession* session);
// Stops reporting to `session`; unhooks dlopen and dlclose.
void stop_watching_for(TraceSession* session);
// Unhooks the unwinder when no traced call is in flight, once no thread is on its way into one:
// called after the session's entry hooks are gone (before, a call entered between the count
// and their removal met an unhooked unwinder, and an exception through it ended the process
// in std::terminate). Returns the number of traced calls still in flight.
uint64_t release_unwinder_hooks_if_idle();

// Traced calls some thread is inside of right now.
uint64_t calls_in_flight();

}  // namespace memprof::tracer
