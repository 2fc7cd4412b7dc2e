#include "heap/diff_report.h"

#include <fmt/format.h>

#include "heap/json_writer.h"

namespace memprof::heap {

std::string render_diff_text(const DiffNames& names, const DiffResult& diff, size_t top) {
  std::string out;
  out += fmt::format("allocated after {} and alive in {}: {} objects, {} bytes\n", names.a, names.b,
                     diff.new_count, diff.new_memsize);
  if (diff.has_third) {
    out += fmt::format("still alive in {}: {} objects, {} bytes\n", names.c, diff.kept_count,
                       diff.kept_memsize);
  }
  if (diff.generations) {
    out += fmt::format(
        "allocation generations: used ({} objects judged older than {} by generation, {} "
        "survivors matched by class, site and generation)\n",
        diff.old_by_generation, names.a, diff.kept_by_generation);
  } else {
    out += "allocation generations: absent (objects moved by GC.compact look new; see docs/heap.md)\n";
  }
  out += fmt::format("addresses reused by a different object: {}\n", diff.address_mismatches);
  size_t n = top == 0 ? diff.rows.size() : std::min(top, diff.rows.size());
  out += fmt::format("\nby location and class ({} of {})\n", n, diff.rows.size());
  out += fmt::format("{:>10} {:>14}  {}\n", "count", "memsize", "location  class");
  for (size_t i = 0; i < n; ++i) {
    const DiffRow& row = diff.rows[i];
    out += fmt::format("{:>10} {:>14}  {}  {}\n", row.count, row.memsize, row.location, row.class_name);
  }
  return out;
}

std::string render_diff_json(const DiffNames& names, const DiffResult& diff, size_t top) {
  JsonWriter json;
  json.begin_object();
  json.field("a", names.a);
  json.field("b", names.b);
  if (diff.has_third) json.field("c", names.c);
  json_count(json, "new", diff.new_count, diff.new_memsize);
  json_count(json, "kept", diff.kept_count, diff.kept_memsize);
  json.key("generations");
  json.raw(diff.generations ? "true" : "false");
  json.field("old_by_generation", diff.old_by_generation);
  json.field("kept_by_generation", diff.kept_by_generation);
  json.field("address_mismatches", diff.address_mismatches);
  json.key("by_location_and_class");
  json.begin_array();
  size_t n = top == 0 ? diff.rows.size() : std::min(top, diff.rows.size());
  for (size_t i = 0; i < n; ++i) {
    json.begin_object();
    json.field("location", diff.rows[i].location);
    json.field("class", diff.rows[i].class_name);
    json.field("count", diff.rows[i].count);
    json.field("memsize", diff.rows[i].memsize);
    json.end_object();
  }
  json.end_array();
  json.end_object();
  return json.str() + "\n";
}

}  // namespace memprof::heap
