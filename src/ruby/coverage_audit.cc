#include "ruby/coverage_audit.h"

#include <map>

namespace memprof::ruby {

CoverageAudit::CoverageAudit(Tracker& tracker) : tracker_(tracker) {}

Result<std::unique_ptr<CoverageAudit>> CoverageAudit::begin(Tracker& tracker, size_t capacity) {
  if (tracker.active()) return err("tracking is already started");
  std::unique_ptr<CoverageAudit> audit(new CoverageAudit(tracker));
  audit->log_.records.reserve(capacity);
  // Created before tracking starts: the tracepoint object itself is not part of the audit.
  audit->newobj_ = std::make_unique<InternalEventHook>(
      RUBY_INTERNAL_EVENT_NEWOBJ,
      [](VALUE object, void* log) {
        static_cast<AuditLog*>(log)->add(object, slot_type(object), true);
      },
      &audit->log_);
  MEMPROF_TRY_STATUS(tracker.start(Mechanism::kHooks));
  tracker.set_audit_log(&audit->log_);
  audit->newobj_->enable();
  audit->running_ = true;
  return audit;
}

void CoverageAudit::stop() {
  if (!running_) return;
  running_ = false;
  newobj_->disable();
  tracker_.set_audit_log(nullptr);
  tracker_.stop();
  tracker_.clear();
}

CoverageAudit::~CoverageAudit() { stop(); }

Result<std::vector<TypeCoverage>> CoverageAudit::finish() {
  stop();
  if (log_.overflowed)
    return err("coverage log overflowed after {} records", log_.records.size());
  std::map<int, TypeCoverage> by_type;
  const auto& records = log_.records;
  for (size_t i = 0; i < records.size(); ++i) {
    if (!records[i].from_event) continue;
    TypeCoverage& c = by_type.try_emplace(records[i].type, TypeCoverage{records[i].type, 0, 0})
                          .first->second;
    ++c.events;
    for (size_t j = i + 1; j < records.size() && !records[j].from_event; ++j) {
      if (records[j].address == records[i].address && records[j].type == records[i].type) {
        ++c.hooked;
        break;
      }
    }
  }
  std::vector<TypeCoverage> out;
  for (auto& [type, coverage] : by_type) out.push_back(coverage);
  return out;
}

}  // namespace memprof::ruby
