// The three-dump technique: objects allocated after dump A and still alive in dump B (and, given
// a third dump C, still alive there too), grouped by allocation site and class.
//
// Identity across dumps. A dump names objects by address only, and addresses are reused: a slot
// freed after A may hold a new object in B, and GC.compact moves objects to new addresses. An
// object of B is "the same" as an object of A when A has an object at the same address with the
// same signature (type, class name, allocation file and line). When allocation tracing was on
// (the dumps carry "generation"), the generation decides what the address cannot:
//   - an object of B whose generation is below the highest generation seen in A was allocated
//     before A was taken, wherever it lives now (GC.compact moved it): not new;
//   - for survival into C, new objects of B not found at their address in C are matched with
//     unclaimed objects of C of the same signature and generation (moved by compaction).
// Without tracing, an object moved by GC.compact between A and B looks new, and one moved between
// B and C looks freed; `address_mismatches` counts the address matches whose signature differed,
// which is how slot reuse and compaction show.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "heap/heap.h"

namespace memprof::heap {

struct DiffRow {
  std::string location;  // "file:line" or kNoSite
  std::string class_name;
  uint64_t count = 0;
  uint64_t memsize = 0;
};

struct DiffResult {
  uint64_t new_count = 0;       // in B, allocated after A
  uint64_t new_memsize = 0;
  bool has_third = false;
  uint64_t kept_count = 0;      // of those, still alive in C (== new_* without C)
  uint64_t kept_memsize = 0;
  bool generations = false;     // A and B carry allocation generations
  uint64_t old_by_generation = 0;     // B objects judged old by generation, not by address
  uint64_t kept_by_generation = 0;    // survivors into C found by signature + generation
  uint64_t address_mismatches = 0;    // addresses present in both with different signatures
  std::vector<DiffRow> rows;    // the kept objects by (location, class), memsize descending
};

DiffResult diff_heaps(const Heap& a, const Heap& b, const Heap* c);

}  // namespace memprof::heap
