#include "trace/capture_plan.h"

namespace memprof::trace {

ArgumentCapture capture_plan(const Prototype& prototype) {
  ArgumentCapture plan{};
  size_t integer_register = 0;
  for (const Parameter& parameter : prototype.parameters) {
    if (is_floating(parameter.type.base)) continue;  // the vector bank
    if (integer_register == plan.size()) break;
    Capture& capture = plan[integer_register++];
    if (parameter.type.lens == Lens::kHidden) continue;
    if (parameter.type.base == BaseType::kString)
      capture = parameter.type.length.stops_at_nul ? Capture::kString : Capture::kBytes;
    else if (parameter.type.base == BaseType::kPointer)
      capture = Capture::kBytes;
  }
  return plan;
}

}  // namespace memprof::trace
