// Writing a finished report (PNG or HTML bytes) to the path the user gave with -o.
#pragma once

#include <span>
#include <string>

#include "core/util/result.h"

namespace memprof::report {

// Creates or truncates `path` and writes all of `bytes`. Fails with "cannot write PATH: <reason>"
// when the file cannot be created, a write comes up short, or close reports a deferred error.
Status write_output_file(const std::string& path, std::span<const unsigned char> bytes);

}  // namespace memprof::report
