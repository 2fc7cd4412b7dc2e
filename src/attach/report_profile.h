// A Ruby report (Memprof::Report#to_json, or `memprof report -p --json`'s "report") as a weighted
// stack profile, for `memprof report --pprof`: one sample per file:line and class, two frames --
// the class (leaf) and the file:line that allocated it -- with what was allocated in the
// window as alloc_objects/alloc_space and what was retained at its end as
// inuse_objects/inuse_space, so `go tool pprof -sample_index=inuse_space` ranks retained memory.
#pragma once

#include <string_view>

#include "core/util/result.h"
#include "profile/stack_profile.h"

namespace memprof::attach {

Result<profile::StackProfile> ruby_report_stack_profile(std::string_view report_json);

}  // namespace memprof::attach
