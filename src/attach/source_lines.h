// Source file:line of call sites in a live process, from the DWARF line tables of the objects
// that carry them (built with -g, or a separate debug file libdw finds: build-id, debuglink).
// Read while the process is alive (libdw opens its objects through /proc/PID); addresses of
// objects without line tables are left out. Built without libdw: always empty.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace memprof::attach {

struct SourceLine {
  std::string file;
  uint32_t line = 0;
};

// For each return address, the line of the call before it.
std::map<uint64_t, SourceLine> source_lines_of(pid_t pid, const std::vector<uint64_t>& return_addresses);

}  // namespace memprof::attach
