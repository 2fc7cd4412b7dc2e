// /proc/PID/maps: the memory mappings of a process.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"

namespace memprof::proc {

struct MapEntry {
  uint64_t start = 0;
  uint64_t end = 0;
  bool readable = false, writable = false, executable = false, shared = false;
  uint64_t offset = 0;  // file offset of `start`
  uint64_t inode = 0;
  std::string path;  // file path, "[heap]", "[vdso]", ... or empty for anonymous memory

  bool contains(uint64_t address) const { return address >= start && address < end; }
  // A mapping of a regular file (not anonymous, not a [pseudo] region, not "(deleted)").
  bool is_file() const;
};

// Parses the text of a maps file. A malformed line is an error naming its line number.
Result<std::vector<MapEntry>> parse_maps(std::string_view text);
// Reads /proc/PID/maps. A PID that does not exist gives "no such process: PID".
Result<std::vector<MapEntry>> read_maps(pid_t pid);

}  // namespace memprof::proc
