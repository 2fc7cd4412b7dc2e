// A `memprof native` snapshot as a weighted stack profile (profile/stack_profile.h), for the
// pprof file, collapsed stacks and the HTML flame graph: one sample per site, its native
// frames (the allocator's caller first) and, in a Ruby process, the Ruby line above them as the
// root-most frame ("app/models/user.rb:12", library "ruby").
#pragma once

#include <string>

#include "attach/native_report.h"
#include "profile/stack_profile.h"

namespace memprof::attach {

profile::StackProfile native_stack_profile(const native::NativeSnapshot& snapshot, FrameNamer& names,
                                           std::string title, double seconds);

}  // namespace memprof::attach
