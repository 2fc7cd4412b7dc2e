// Text and JSON renderings of a DiffResult (diff.h) for `memprof diff`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "heap/diff.h"

namespace memprof::heap {

struct DiffNames {
  std::string_view a, b, c;  // c empty: two-dump diff
};

std::string render_diff_text(const DiffNames& names, const DiffResult& diff, size_t top);
// {"a","b","c"?,"new":{count,memsize},"kept":{count,memsize},"generations":bool,
//  "old_by_generation","kept_by_generation","address_mismatches",
//  "by_location_and_class":[{"location","class","count","memsize"}]}
std::string render_diff_json(const DiffNames& names, const DiffResult& diff, size_t top);

}  // namespace memprof::heap
