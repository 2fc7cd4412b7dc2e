// Text and JSON renderings of an Analysis (analysis.h) for `memprof analyze`.
#pragma once

#include <string>
#include <string_view>

#include "heap/analysis.h"

namespace memprof::heap {

struct ReportContext {
  std::string_view dump_name;
  const Heap& heap;
  const DominatorTree& dominators;
  size_t top = 20;  // rows per list; 0: all
  std::string filter;  // ObjectFilter::describe() of the selection, "" when none
};

std::string render_analysis_text(const ReportContext& context, const Analysis& analysis);
// One JSON object on one line followed by '\n'. Keys: dump, lines, bad_lines, problems
// {lost_root_lines, bad_values, dangling_references, duplicate_addresses, non_utf8_lines,
// cut_short? (a dump cut off: "truncated gzip stream", "cut off in the middle of a line")},
// total {count, memsize}, reachable {count, memsize}, machine_context_only {count, memsize}, roots
// [{kind, count}], free_slots (dump_all(full: true)'s empty slots),
// by_type/by_class/by_location/by_gem/by_generation [{name, count, memsize, retained, samples?}],
// biggest/top_retained/machine_context_only_objects [{address, type, class,
// name, memsize, retained, location}] (name: Heap::object_label, a class or module's own name),
// most_referenced [{...same, referrers}], duplicate_strings [{value, cut, length, count,
// memsize, wasted, samples?}]; "filter" when a selection was made.
std::string render_analysis_json(const ReportContext& context, const Analysis& analysis);

// "0x7f35c85e0010" (Ruby's spelling of addresses).
std::string address_text(uint64_t address);
// One line describing an object: "0x... STRING String, 40 bytes (retains 40) @ file:line"; a
// class or module by its own name ("0x... MODULE Concurrent, ...").
std::string describe_object(const Heap& heap, const DominatorTree* dominators, ObjectId id);

}  // namespace memprof::heap
