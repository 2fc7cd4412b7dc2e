// The one way this area's writers put a finished output on disk, so that all three behave alike:
// through report/output_file.h (a temporary file renamed over the path), never half written.
#pragma once

#include <string>

#include "core/util/result.h"

namespace memprof::profile {

// Writes `bytes` to `path`, or passes on the error that producing them gave.
Status write_profile_file(const std::string& path, const Result<std::string>& bytes);

}  // namespace memprof::profile
