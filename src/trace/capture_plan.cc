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
    bool string = parameter.type.base == BaseType::kString;
    if (!string && parameter.type.base != BaseType::kPointer) continue;
    bool stops_at_nul = string && parameter.type.length.stops_at_nul;
    if (parameter.is_output)
      capture = stops_at_nul ? Capture::kStringAtReturn : Capture::kBytesAtReturn;
    else
      capture = stops_at_nul ? Capture::kString : Capture::kBytes;
  }
  return plan;
}

}  // namespace memprof::trace
