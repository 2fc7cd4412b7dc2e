#include "heap/diff_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "heap/analysis_report.h"
#include "heap/json_writer.h"
#include "heap/units.h"

namespace memprof::heap {
namespace {

size_t shown(size_t available, size_t top) { return top == 0 ? available : std::min(top, available); }

std::string objects_text(uint64_t count, uint64_t memsize) {
  return fmt::format("{} object{}, {}", count_text(count), count == 1 ? "" : "s", bytes_text(memsize));
}

std::string generation_text(uint32_t generation) {
  return generation == kNoGeneration ? "none" : std::to_string(generation);
}

void text_rows(std::string& out, std::string_view title, const DiffReportContext& context,
               const std::vector<DiffRow>& rows) {
  const size_t n = shown(rows.size(), context.top);
  out += fmt::format("\n{} ({} of {})\n", title, n, rows.size());
  out += fmt::format("{:>10} {:>10}  {}\n", "count", "memsize", "location  class");
  for (size_t i = 0; i < n; ++i) {
    const DiffRow& row = rows[i];
    out += fmt::format("{:>10} {:>10}  {}  {}\n", count_text(row.count), bytes_text(row.memsize),
                       row.location, row.class_name);
    if (!row.samples.empty()) {
      std::vector<std::string> addresses;
      for (ObjectId id : row.samples) addresses.push_back(address_text(context.b.address[id]));
      out += fmt::format("{:>23}e.g. {}\n", "", fmt::join(addresses, " "));
    }
  }
}

void json_rows(JsonWriter& json, std::string_view key, const DiffReportContext& context,
               const std::vector<DiffRow>& rows) {
  json.key(key);
  json.begin_array();
  for (size_t i = 0, n = shown(rows.size(), context.top); i < n; ++i) {
    const DiffRow& row = rows[i];
    json.begin_object();
    json.field("location", row.location);
    json.field("class", row.class_name);
    json.field("count", row.count);
    json.field("memsize", row.memsize);
    if (!row.samples.empty()) {
      json.key("samples");
      json.begin_array();
      for (ObjectId id : row.samples) json.value(address_text(context.b.address[id]));
      json.end_array();
    }
    json.end_object();
  }
  json.end_array();
}

void json_generation(JsonWriter& json, std::string_view key, uint32_t generation) {
  json.field_or_null(key, generation == kNoGeneration ? std::nullopt : std::optional<uint64_t>(generation));
}

}  // namespace

std::string render_diff_text(const DiffReportContext& context, const DiffResult& diff) {
  const DiffNames& names = context.names;
  std::string out;
  if (!context.filter.empty()) out += fmt::format("objects of {} only\n", context.filter);
  out += fmt::format("allocated after {} and alive in {}: {}\n", names.a, names.b,
                     objects_text(diff.new_count, diff.new_memsize));
  if (diff.has_third) {
    out += fmt::format("still alive in {}: {}\n", names.c, objects_text(diff.kept_count, diff.kept_memsize));
  }
  if (diff.garbage_known) {
    out += fmt::format("left out, unreachable in {}: {} (garbage the GC had not swept yet)\n", names.b,
                       objects_text(diff.garbage_count, diff.garbage_memsize));
  } else {
    out += fmt::format("unreachable objects of {} counted as alive: its ROOT lines are missing or "
                       "were not all read\n", names.b);
  }
  if (diff.own_count > 0) {
    out += fmt::format("left out, made by memprof to write {}: {} (the dump's File, paths, call caches)\n",
                       names.b, objects_text(diff.own_count, diff.own_memsize));
  }
  if (diff.generations) {
    out += fmt::format("allocation generations: newest {} in {}, {} in {}", diff.max_generation_a,
                       names.a, diff.max_generation_b, names.b);
    if (diff.has_third) out += fmt::format(", {} in {}", generation_text(diff.max_generation_c), names.c);
    out += "\n";
    out += fmt::format("decided by generation: {} new, {} old\n", count_text(diff.new_by_generation),
                       count_text(diff.old_by_generation));
    if (diff.new_by_class_count > 0) {
      out += fmt::format("decided by class counts: {} new (no allocation generation, but {} has "
                         "fewer objects of their class)\n",
                         count_text(diff.new_by_class_count), names.a);
    }
    out += fmt::format("could not be decided: {}", objects_text(diff.undecided_count, diff.undecided_memsize));
    if (diff.undecided_count > 0) {
      // Before 3.4, ext/objspace's compaction hook compared the allocation record, not the
      // object, with its new location, so a moved object's record was never re-keyed.
      out += fmt::format(" (no allocation generation: GC.compact moved them, which drops it "
                         "before Ruby 3.4, or they predate allocation tracing; {} has as many "
                         "objects of their class that they may be)",
                         names.a);
    }
    out += "\n";
    if (diff.has_third) {
      out += fmt::format("survivors found moved in {}: {} (by class, site and generation)\n", names.c,
                         count_text(diff.kept_by_generation));
      out += fmt::format("could not be decided in {}: {}", names.c,
                         objects_text(diff.undecided_in_c_count, diff.undecided_in_c_memsize));
      if (diff.undecided_in_c_count > 0) {
        out += fmt::format(" (not at their address in {0}, which has as many objects of their class "
                           "without allocation generation: GC.compact moved them, which drops it "
                           "before Ruby 3.4; they may be these, or objects allocated after {1})",
                           names.c, names.b);
      }
      out += "\n";
    }
  } else {
    out += "allocation generations: absent (decided by address, class and site: objects moved by "
           "GC.compact look new, and new objects in slots freed and reused by their class look old; "
           "dumps written by `memprof dump` or Memprof.dump_all while tracking, or with "
           "ObjectSpace.trace_object_allocations_start, make it exact; see docs/heap.md)\n";
  }
  out += fmt::format("addresses reused by a different object: {}\n", count_text(diff.address_mismatches));
  text_rows(out, "by location and class", context, diff.rows);
  if (!diff.undecided_rows.empty()) text_rows(out, "could not be decided, by class", context, diff.undecided_rows);
  if (!diff.undecided_in_c_rows.empty()) {
    text_rows(out, fmt::format("could not be decided in {}, by location and class", names.c), context,
              diff.undecided_in_c_rows);
  }
  return out;
}

std::string render_diff_json(const DiffReportContext& context, const DiffResult& diff) {
  const DiffNames& names = context.names;
  JsonWriter json;
  json.begin_object();
  json.field("a", names.a);
  json.field("b", names.b);
  if (diff.has_third) json.field("c", names.c);
  if (!context.filter.empty()) json.field("filter", context.filter);
  json_count(json, "new", diff.new_count, diff.new_memsize);
  json_count(json, "kept", diff.kept_count, diff.kept_memsize);
  if (diff.garbage_known) {
    json_count(json, "garbage", diff.garbage_count, diff.garbage_memsize);
  } else {
    json.key("garbage");
    json.raw("null");
  }
  json_count(json, "memprof_own", diff.own_count, diff.own_memsize);
  json.flag("generations", diff.generations);
  json.key("max_generation");
  json.begin_object();
  json_generation(json, "a", diff.max_generation_a);
  json_generation(json, "b", diff.max_generation_b);
  if (diff.has_third) json_generation(json, "c", diff.max_generation_c);
  json.end_object();
  json.key("decided");
  json.begin_object();
  json.field("new_by_generation", diff.new_by_generation);
  json.field("old_by_generation", diff.old_by_generation);
  json.field("new_by_class_count", diff.new_by_class_count);
  json.end_object();
  json_count(json, "undecided", diff.undecided_count, diff.undecided_memsize);
  json.field("kept_by_generation", diff.kept_by_generation);
  if (diff.has_third) json_count(json, "undecided_in_c", diff.undecided_in_c_count, diff.undecided_in_c_memsize);
  json.field("address_mismatches", diff.address_mismatches);
  json_rows(json, "by_location_and_class", context, diff.rows);
  json_rows(json, "undecided_by_class", context, diff.undecided_rows);
  if (diff.has_third) json_rows(json, "undecided_in_c_by_location_and_class", context, diff.undecided_in_c_rows);
  json.end_object();
  return json.str() + "\n";
}

}  // namespace memprof::heap
