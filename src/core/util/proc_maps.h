// The text of /proc/PID/maps: one parser for the proc area (any process) and the hook engine
// (this process, before each patch), which does not link memprof_proc.
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"

namespace memprof {

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
  // A mapping of a file deleted since it was mapped: "/path (deleted)".
  bool is_deleted_file() const;
  // The mapped file's path, without " (deleted)".
  std::string_view file_path() const;
  // The permissions as mprotect takes them: PROT_READ | PROT_WRITE | PROT_EXEC bits.
  int protection() const {
    return (readable ? PROT_READ : 0) | (writable ? PROT_WRITE : 0) | (executable ? PROT_EXEC : 0);
  }
};

// Parses the text of a maps file. A malformed line is an error naming its line number.
Result<std::vector<MapEntry>> parse_maps(std::string_view text);

// The entry containing `address` in `entries` sorted by address (as the kernel lists them), or
// nullptr.
const MapEntry* find_mapping(const std::vector<MapEntry>& entries, uint64_t address);

// This process's mappings (/proc/self/maps).
Result<std::vector<MapEntry>> read_self_maps();

}  // namespace memprof
