// One `memprof trace` inside the target: which functions are traced, the hooks that trace
// them, the watch on dlopen that traces matching functions of objects loaded later, and the
// reader that drains the threads' rings (trampoline.h does the tracing itself).
//
// Functions are found by the -x filters (symbol_filter.h) over the dynamic symbol tables of the
// loaded objects (defined functions, IFUNCs resolved as the loader does) and hooked at their
// entry, so every caller is seen: calls from other objects through the GOT, calls inside the
// defining object, calls through pointers from dlsym (a Ruby C extension's methods). A function
// whose entry cannot be patched (too short, a branch into its first bytes) is traced through the
// GOT slots of the objects that import it instead, and the reply says so.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/hook/entry_hook.h"
#include "core/hook/got_hook.h"
#include "core/util/result.h"
#include "trace/call_record.h"
#include "tracer/symbol_filter.h"
#include "tracer/thread_trace.h"
#include "tracer/tick_clock.h"
#include "tracer/trampoline.h"

namespace memprof::tracer {

// Patterns with a ':' name event sources ("ruby:gc"), which the agent adds itself
// (add_event_source); the others are function names.
inline bool is_event_pattern(const std::string& pattern) { return pattern.find(':') != std::string::npos; }

// Whether `name` matches one of the fnmatch globs (-x and -l patterns).
bool matches_any(const std::vector<std::string>& globs, const std::string& name);

// Why `glob` is not what its author meant, or "" when it is fine: a '[' that no ']' closes
// (fnmatch would take it literally, and match nothing).
std::string malformed_glob(std::string_view glob);

// A defined function whose name matches the request.
struct Candidate {
  std::string name;
  uintptr_t address;
  // The implementation an IFUNC resolver chose (glibc's memmove, strlen: hand-written code
  // whose variants jump into each other's first bytes, __mempcpy_avx_unaligned_erms into
  // __memmove_avx_unaligned_erms + 3). A jump over those bytes crashed the process
  // (`trace -x '*'`): such functions are traced through the GOT only.
  bool ifunc = false;
};

struct TraceRequest {
  std::vector<std::string> patterns;   // ltrace filter expressions (symbol_filter.h) and event sources
  std::vector<std::string> libraries;  // object name globs (basename); empty: every object
  std::map<std::string, trace::ArgumentCapture, std::less<>> captures;  // by function name
  bool records = true;  // false: counters only (memprof trace -c)
  bool ruby_caller = false;  // each record carries the Ruby file:line (the agent's caller source)
  bool verbose = false;      // a problem line for each function traced only through the GOT, or not at all
};

struct HookedFunction {
  uint32_t id = 0;
  std::string name;
  std::string object;
  uintptr_t address = 0;
  bool through_got = false;  // entry not patchable: only calls through GOT slots are seen
};

struct FunctionTotals {
  uint32_t id = 0;
  uint64_t calls = 0;
  uint64_t nanoseconds = 0;
};

struct TraceReadout {
  std::vector<trace::CallRecord> records;
  std::vector<HookedFunction> new_functions;  // hooked since the last read (dlopen)
  std::vector<std::string> problems;          // since the last read
  std::vector<std::string> untraceable;       // matched but refused (vfork, _start, ...), since the last read
  uint64_t dropped = 0;                       // records lost to full rings, since the start of this trace
  uint64_t untraced = 0;  // calls not traced: nested too deep, or no thread state left
  bool process_exiting = false;  // exit() is waiting for the trace to stop
  bool exec_waiting = false;     // an exec is waiting for this readout to be out
  uint64_t children = 0;         // child processes started since this trace's start: not traced
};

class TraceSession {
 public:
  // Hooks every matching function. Patterns that match nothing are problems, not failures
  // (objects loaded later are watched); it fails only when nothing could be watched at all.
  static Result<std::unique_ptr<TraceSession>> start(TraceRequest request);
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;
  // Removes the hooks (every patched byte restored). Calls in flight finish normally.
  ~TraceSession();

  // The reader: finished calls (at most `max_records`) and what changed since the last read.
  TraceReadout read(size_t max_records);
  // Calls made since the start that have not returned (a read blocked on a socket, an execve
  // that replaces the program), as records with the outcome kUnfinished: their arguments, no
  // result. A thread that returns or makes a call while it is read is left out.
  std::vector<trace::CallRecord> unfinished_calls() const;
  // Calls and time per traced function since the start.
  std::vector<FunctionTotals> totals() const;
  // Hooked at the start (later ones come through read()).
  const std::vector<HookedFunction>& initial_functions() const { return initial_; }

  // The dlopen watch: hooks matching functions of objects loaded since the last look.
  void hook_new_objects();
  // The dlclose watch: forgets the objects no longer loaded and their hooks, so that an object
  // loaded again, at the same address as often as not, is hooked again.
  void forget_unloaded_objects();
  // Adds an event source (trampoline.h's event_source) to the trace's functions and totals.
  Result<uint32_t> add_event_source(const char* name);

 private:
  TraceSession(TraceRequest request, std::vector<SymbolFilter> filters)
      : request_(std::move(request)), filters_(std::move(filters)) {}
  void hook_objects_locked(std::vector<HookedFunction>& added);
  // The seen objects unloaded and loaded again at the same address, whose hooks are gone.
  std::vector<hook::ObjectKey> reloaded_objects_locked(const std::vector<hook::LoadedObject>& loaded) const;
  // Per function: an entry hook (all of them installed with one parking of the threads),
  // else GOT hooks: why the entry was refused when it went through the GOT. An IFUNC
  // implementation is never entry-hooked (see matching_functions).
  std::vector<Result<std::optional<std::string>>> hook_functions(const std::vector<Candidate>& candidates,
                                                                 const std::vector<TracedFunction*>& functions);
  struct LostCalls {
    uint64_t dropped;   // records dropped by full rings
    uint64_t untraced;  // calls not traced (nested too deep, no thread state)
  };
  // Since the process's first trace: every ring and thread state lives as long as the process.
  static LostCalls lost_calls();
  std::vector<FunctionCounters> sum_counters(uint32_t functions) const;

  TraceRequest request_;
  std::vector<SymbolFilter> filters_;  // request_.patterns, parsed
  mutable std::mutex mutex_;  // hooks_, seen_objects_, pending_*
  std::vector<std::unique_ptr<hook::EntryHook>> entry_hooks_;
  std::vector<std::unique_ptr<hook::GotHook>> got_hooks_;
  std::vector<hook::ObjectKey> seen_objects_;
  std::vector<HookedFunction> initial_;
  std::vector<HookedFunction> pending_functions_;
  std::vector<std::string> pending_problems_;
  std::vector<std::string> pending_untraceable_;
  std::set<std::string> objects_with_problems_said_;  // by path
  std::vector<uint32_t> ids_;  // every function this session hooked
  std::vector<FunctionCounters> baseline_;  // counters by id at the start (reused functions)
  LostCalls lost_at_start_{0, 0};
  TickClock clock_;
  uint64_t start_ticks_ = 0;  // calls entered before are an earlier session's
};

}  // namespace memprof::tracer
