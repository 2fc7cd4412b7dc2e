// `memprof native`'s full garbage collection before its last readout. In a Ruby process the
// malloc blocks of objects that are no longer reachable stay allocated until a collection sweeps
// those objects: without one, "live at the end (leaked)" lists a JSON parser's buffers, Strings
// and Hashes that are garbage, charged to the lines that made them.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace memprof::attach {

// Runs the collection in process `pid` (its native session is running) and returns the line to
// say about it: how long it took, or why it did not run (the app disabled GC, the agent's job
// could not run, ...). Nothing for a process without Ruby.
std::optional<std::string> collect_garbage_before_readout(pid_t pid);

}  // namespace memprof::attach
