// Adds the allocation site and generation to the object lines of a heap dump in
// ObjectSpace.dump_all's format (one JSON object per line). An object line starts with
// {"address":"0x..."; when the lookup knows that address, `, "file":"...", "line":N,
// "generation":G` is inserted before the closing brace, the fields Ruby's own allocation tracing
// writes. Where Ruby wrote them already for another file or line (a stale entry of its table:
// see dump_annotate.cc), memprof's replace them. The objects the dump's writer made itself get
// `, "memprof_own":true` after that (ruby/dump_own_objects.h). Every other line is copied
// unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/util/result.h"

namespace memprof::track {

struct SourceLocation {
  std::string_view file;
  int line;
  std::optional<uint32_t> generation;  // the GC count at the allocation, when known
};

using SiteLookup = std::function<std::optional<SourceLocation>(uintptr_t address)>;
// Whether the object at `address` is one the dump's writer made itself.
using OwnObject = std::function<bool(uintptr_t address)>;

// The address of an object line, or nullopt for ROOT/SHAPE lines and anything unparsable.
std::optional<uintptr_t> dump_line_address(std::string_view line);

// Returns the annotated line (or the line itself).
std::string annotate_dump_line(std::string_view line, const SiteLookup& lookup);

struct AnnotateCounts {
  uint64_t lines = 0;
  uint64_t annotated = 0;  // given a site
  uint64_t own = 0;        // marked as the writer's own
};

// What a dump written in a forked child shows as the parent had it (ruby/heap_at_fork.h): the
// ROOT lines (each ending in '\n'), and the references of the objects the child changed (the
// Ractor and its threads), each a JSON array of addresses.
struct ParentView {
  std::string root_lines;
  std::unordered_map<uintptr_t, std::string> references;
};

// Streams `in` to `out`, annotating each line. With `parent`, its ROOT lines are written first
// (where Ruby writes roots) instead of the dump's, and its references replace those of the
// objects it names. Fails on a write error.
Result<AnnotateCounts> annotate_dump(std::istream& in, std::ostream& out, const SiteLookup& lookup,
                                     const OwnObject& own = nullptr, const ParentView* parent = nullptr);

}  // namespace memprof::track
