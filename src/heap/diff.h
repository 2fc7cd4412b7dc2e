// The three-dump technique: objects allocated after dump A and still alive in dump B (and, given
// a third dump C, still alive there too), grouped by allocation site and class.
//
// Identity across dumps. A dump names objects by address only, and addresses are reused: a slot
// freed after A may hold a new object in B, and GC.compact moves objects. So the allocation
// generation (the GC count when the object was allocated, written when allocation tracing is
// on) decides whenever it is known:
//   - an object of B whose generation is above every generation in A was allocated after A,
//     even in a slot an object of A left, from the same line: new;
//   - one whose generation is below A's newest was allocated before A: old, wherever it lives;
//   - one of A's newest generation is old when A holds it (at its address, or an unclaimed
//     object of the same class, site and generation elsewhere), else new.
// Objects of B without a generation in a traced dump either predate tracing or were moved by
// GC.compact, which before Ruby 3.4 drops the allocation info of every object it moves. One that
// A holds at its address (same class, no generation either) is old. For the others, class counts
// decide what they can: B's objects of a class that are old were objects of A of that class, so
// if A has k objects of the class and j of them are already accounted for, all but k - j of
// them are new. The rest could not be decided and are reported apart, by class.
//
// Without generations an object of B is old when A has an object at its address with the same
// type, class and site; an object moved by GC.compact between A and B then looks new.
//
// Survival into C: at the same address with the same class, site and generation; else (with
// generations) an unclaimed object of C with the same class, site and generation (moved); else
// an object of C of the same class without allocation info (moved by GC.compact before 3.4), as
// many as C has beyond those of B that were already there.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"
#include "heap/heap.h"
#include "heap/object_filter.h"

namespace memprof::heap {

struct DiffRow {
  std::string location;  // "file:line" or kNoSite
  std::string class_name;
  uint64_t count = 0;
  uint64_t memsize = 0;
  std::vector<ObjectId> samples;  // objects of B in the row, the largest first (DiffOptions)
};

struct DiffOptions {
  const ObjectSelection* selection = nullptr;  // objects of B to look at; nullptr: all
  size_t samples = 0;                          // sample objects per row
  // Objects of A, B and C reachable from their roots (reachable_from_roots); nullptr: every
  // object of the dump is taken as alive. An unreachable object is garbage the GC had not
  // swept yet: not alive, whatever the dump lists. Garbage of A is alive in no later dump, so
  // an object of B in its slot, or of its class, site and generation, is not it.
  const std::vector<uint8_t>* reachable_a = nullptr;
  const std::vector<uint8_t>* reachable_b = nullptr;
  const std::vector<uint8_t>* reachable_c = nullptr;
};

struct DiffResult {
  uint64_t new_count = 0;       // in B, allocated after A
  uint64_t new_memsize = 0;
  bool has_third = false;
  uint64_t kept_count = 0;      // of those, still alive in C (== new_* without C)
  uint64_t kept_memsize = 0;

  bool generations = false;     // A and B carry allocation generations
  uint32_t max_generation_a = kNoGeneration;  // newest generation in each dump
  uint32_t max_generation_b = kNoGeneration;
  uint32_t max_generation_c = kNoGeneration;
  uint64_t new_by_generation = 0;  // how the objects of B were decided
  uint64_t old_by_generation = 0;
  uint64_t new_by_class_count = 0;  // no generation, but A has too few objects of their class
  uint64_t undecided_count = 0;     // no generation, and they may be old
  uint64_t undecided_memsize = 0;
  uint64_t kept_by_generation = 0;  // survivors into C found moved, by class, site, generation
  // New objects of B not found in C, for which C holds as many objects of their class without
  // generation: moved by GC.compact (which drops it before Ruby 3.4) and kept, or freed, their
  // class's objects in C allocated after B and moved. Neither kept nor gone: listed apart.
  uint64_t undecided_in_c_count = 0;
  uint64_t undecided_in_c_memsize = 0;
  uint64_t address_mismatches = 0;  // addresses present in both with different objects
  // Objects of B that would be new or undecided but are unreachable in B: left out of the new,
  // kept and undecided counts and of the rows (new_by_generation and new_by_class_count, which
  // say how objects were identified, still include them). Only when DiffOptions::reachable_b
  // was given (garbage_known).
  bool garbage_known = false;
  uint64_t garbage_count = 0;
  uint64_t garbage_memsize = 0;
  // Objects of B that Memprof.dump_all made to write B ("memprof_own"), alive and otherwise new
  // or undecided: left out like the garbage.
  uint64_t own_count = 0;
  uint64_t own_memsize = 0;
  std::vector<DiffRow> rows;            // the kept objects by (location, class), memsize descending
  std::vector<DiffRow> undecided_rows;  // the undecided objects by class, memsize descending
  std::vector<DiffRow> undecided_in_c_rows;  // by (location, class), memsize descending
};

DiffResult diff_heaps(const Heap& a, const Heap& b, const Heap* c, const DiffOptions& options = {});

// Fails when `later` cannot have been taken after `earlier` in the same process: its newest
// allocation generation is older (the dumps were given in the wrong order), or the two share
// no heap page (64 KiB regions of object addresses: different processes).
Status check_dump_order(const Heap& earlier, std::string_view earlier_name, const Heap& later,
                        std::string_view later_name);

}  // namespace memprof::heap
