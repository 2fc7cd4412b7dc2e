// The coverage oracle: while a block runs, Ruby's NEWOBJ event and the allocation hooks both
// log into one sequence. Every NEWOBJ event of a tracked type must be followed, before the next
// event, by a hook record of the same address and type (a hook records right after the
// allocating call returns, and no other allocation happens in between). The free-event-less
// liveness scheme is sound exactly for the types where this holds for every event.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/util/result.h"
#include "ruby/internal_events.h"
#include "ruby/tracker.h"

namespace memprof::ruby {

struct TypeCoverage {
  int type;         // RUBY_T_*
  uint64_t events;  // NEWOBJ events of this type
  uint64_t hooked;  // of those, seen by a hook
};

class CoverageAudit {
 public:
  // Starts hook-based tracking (fails if tracking is on or hooks are unavailable) and the
  // NEWOBJ event. `capacity` bounds the log; an overflow makes finish() fail.
  static Result<std::unique_ptr<CoverageAudit>> begin(Tracker& tracker, size_t capacity);
  // Stops both and compares. One entry per type that had events, by type.
  Result<std::vector<TypeCoverage>> finish();
  ~CoverageAudit();
  CoverageAudit(const CoverageAudit&) = delete;
  CoverageAudit& operator=(const CoverageAudit&) = delete;

 private:
  explicit CoverageAudit(Tracker& tracker);
  void stop();

  Tracker& tracker_;
  AuditLog log_;
  std::unique_ptr<InternalEventHook> newobj_;
  bool running_ = false;
};

}  // namespace memprof::ruby
