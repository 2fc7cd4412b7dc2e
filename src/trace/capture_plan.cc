#include "trace/capture_plan.h"

namespace memprof::trace {

ArgumentCapture capture_plan(const Prototype& prototype) {
  ArgumentCapture plan{};
  size_t integer_register = 0;
  for (const Parameter& parameter : prototype.parameters) {
    if (is_floating(parameter.type.base)) continue;  // the vector bank
    if (integer_register == kReturnValue) break;
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
  // A returned string (getenv, setlocale, strerror) is copied as the call returns.
  const Type& returned = prototype.return_type;
  if (returned.base == BaseType::kString && returned.lens != Lens::kHidden && returned.length.stops_at_nul)
    plan[kReturnValue] = Capture::kStringAtReturn;
  return plan;
}

}  // namespace memprof::trace
