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

struct DiffReportContext {
  DiffNames names;
  const Heap& b;           // the dump the rows' sample objects belong to
  size_t top = 20;         // rows per table; 0: all
  std::string filter;      // ObjectFilter::describe(), "" when none
};

std::string render_diff_text(const DiffReportContext& context, const DiffResult& diff);
// {"a","b","c"?,"filter"?,"new":{count,memsize},"kept":{count,memsize},"generations":bool,
//  "garbage":{count,memsize} (null when B's roots are incomplete),
//  "max_generation":{"a","b","c"?} (null when absent),
//  "decided":{"new_by_generation","old_by_generation","new_by_class_count"},
//  "undecided":{count,memsize},"kept_by_generation","undecided_in_c"?:{count,memsize},
//  "address_mismatches",
//  "by_location_and_class":[{"location","class","count","memsize","samples"?}],
//  "undecided_by_class":[{"location","class","count","memsize","samples"?}],
//  "undecided_in_c_by_location_and_class"?:[...same]}
std::string render_diff_json(const DiffReportContext& context, const DiffResult& diff);

}  // namespace memprof::heap
