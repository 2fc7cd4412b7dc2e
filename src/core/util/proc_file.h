// Reading small text files under /proc (maps, status, sysctls) into a string. Shared by the proc
// area and the hook engine (which reads /proc/self/maps before each patch).
#pragma once

#include <string>
#include <string_view>

#include "core/util/result.h"

namespace memprof {

// The whole file ("PATH: strerror" on failure). /proc files report size 0, so this reads until
// EOF. `error_number` (when given) receives errno on failure so that callers can tell a vanished
// process (ENOENT, ESRCH) from a refused one (EACCES, EPERM).
Result<std::string> read_proc_file(const std::string& path, int* error_number = nullptr);

// The value of a "Key:\tvalue" line of a /proc/PID/status text (leading blanks removed), or empty.
std::string status_field(std::string_view status, std::string_view key);

}  // namespace memprof
