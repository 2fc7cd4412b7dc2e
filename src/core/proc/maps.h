// /proc/PID/maps: the memory mappings of a process. MapEntry and parse_maps live in the util
// area (core/util/proc_maps.h), shared with the hook engine.
#pragma once

#include <sys/types.h>

#include <vector>

#include "core/util/proc_maps.h"
#include "core/util/result.h"

namespace memprof::proc {

using memprof::MapEntry;
using memprof::parse_maps;

// Reads /proc/PID/maps. A PID that does not exist gives "no such process: PID".
Result<std::vector<MapEntry>> read_maps(pid_t pid);

}  // namespace memprof::proc
