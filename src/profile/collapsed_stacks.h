// Brendan Gregg's collapsed ("folded") stacks, the input of flamegraph.pl, inferno, speedscope
// and most flame graph tools: one line per stack, root first, frames joined by ';', then a space
// and the stack's value:
//
//   main;ruby_line;leak_it 409600
#pragma once

#include <string>

#include "core/util/result.h"
#include "profile/stack_profile.h"

namespace memprof::profile {

// The lines for `value`, in byte order of their text (deterministic, and as flamegraph.pl sorts
// them). Frames are frame_label()s, with the two characters the format cannot carry replaced as
// the FlameGraph tools do: ';' (the frame separator) by ':', and control characters (a newline
// would end the line) by '?'. Stacks whose text comes out the same (one function called from
// several addresses) are one line with the sum; stacks whose value is 0 are left out, and a
// stack without frames is "[unknown]". Fails as check_stack_profile() does.
Result<std::string> collapsed_stacks(const StackProfile& profile, SampleValue value);

// collapsed_stacks() written to `path` through a temporary file and a rename. Fails with the
// profile's error or "cannot write PATH: <reason>".
Status write_collapsed_stacks(const std::string& path, const StackProfile& profile,
                              SampleValue value);

}  // namespace memprof::profile
