// What a hook must copy at the call for the CLI to show a prototype's pointer arguments later
// (call_record.h): strings (and printf formats) as strings, T* and counted buffers as bytes.
#pragma once

#include "trace/call_record.h"
#include "trace/prototype.h"

namespace memprof::trace {

ArgumentCapture capture_plan(const Prototype& prototype);

}  // namespace memprof::trace
