// Test helper: the kernel's flags for the mapping that holds an address.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/util/proc_file.h"

namespace memprof {

// The "VmFlags:" line of the mapping of /proc/self/smaps that holds `address`, or "" when no
// mapping holds it.
inline std::string vm_flags_at(const void* address) {
  auto smaps = read_proc_file("/proc/self/smaps");
  EXPECT_TRUE(smaps.ok()) << smaps.message();
  const auto target = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  size_t position = 0;
  const std::string& text = *smaps;
  while (position < text.size()) {
    size_t end = text.find('\n', position);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(position, end - position);
    position = end + 1;
    uintptr_t start = 0, stop = 0;
    // A mapping's first line starts "start-end "; its fields' lines ("Size:", ...) do not.
    if (std::sscanf(line.c_str(), "%lx-%lx ", &start, &stop) == 2) {
      inside = start <= target && target < stop;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

}  // namespace memprof
