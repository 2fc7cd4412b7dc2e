// This process's memory map (/proc/self/maps) as the hook engine needs it: the protection of a
// page, and the free gaps where trampolines can be placed near code.
#pragma once

#include <cstdint>
#include <vector>

#include "core/util/result.h"

namespace memprof::hook {

struct MappedRange {
  uintptr_t start;
  uintptr_t end;
  int protection;  // PROT_READ | PROT_WRITE | PROT_EXEC bits
};

// Every mapping, sorted by address (the kernel lists them in order).
Result<std::vector<MappedRange>> read_self_maps();

// The range containing `address`, or nullptr.
const MappedRange* find_range(const std::vector<MappedRange>& ranges, uintptr_t address);

}  // namespace memprof::hook
