#include "heap/analysis_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "heap/json_writer.h"

namespace memprof::heap {
namespace {

size_t shown(size_t available, size_t top) { return top == 0 ? available : std::min(available, top); }

void text_groups(std::string& out, std::string_view title, const std::vector<GroupRow>& rows,
                 size_t top) {
  size_t n = shown(rows.size(), top);
  out += fmt::format("\n{} ({} of {})\n", title, n, rows.size());
  out += fmt::format("{:>10} {:>14} {:>14}  {}\n", "count", "memsize", "retained", "name");
  for (size_t i = 0; i < n; ++i) {
    const GroupRow& row = rows[i];
    out += fmt::format("{:>10} {:>14} {:>14}  {}\n", row.count, row.memsize, row.retained, row.name);
  }
}

void text_objects(std::string& out, std::string_view title, const ReportContext& context,
                  const std::vector<ObjectId>& ids) {
  out += fmt::format("\n{} ({})\n", title, ids.size());
  out += fmt::format("{:>14} {:>14}  {:<18} {:<8} {}\n", "memsize", "retained", "address", "type",
                     "class @ location");
  for (ObjectId id : ids) {
    std::string site = context.heap.site_label(id);
    out += fmt::format("{:>14} {:>14}  {:<18} {:<8} {}{}{}\n", context.heap.memsize[id],
                       context.dominators.retained[id], address_text(context.heap.address[id]),
                       object_type_name(context.heap.type[id]), context.heap.object_label(id),
                       site.empty() ? "" : " @ ", site);
  }
}

void json_groups(JsonWriter& json, std::string_view name, const std::vector<GroupRow>& rows,
                 size_t top) {
  json.key(name);
  json.begin_array();
  for (size_t i = 0, n = shown(rows.size(), top); i < n; ++i) {
    json.begin_object();
    json.field("name", rows[i].name);
    json.field("count", rows[i].count);
    json.field("memsize", rows[i].memsize);
    json.field("retained", rows[i].retained);
    json.end_object();
  }
  json.end_array();
}

void json_objects(JsonWriter& json, std::string_view name, const ReportContext& context,
                  const std::vector<ObjectId>& ids) {
  json.key(name);
  json.begin_array();
  for (ObjectId id : ids) {
    json.begin_object();
    json.field("address", address_text(context.heap.address[id]));
    json.field("type", object_type_name(context.heap.type[id]));
    json.field("class", context.heap.class_label(id));
    json.field("name", context.heap.object_label(id));
    json.field("memsize", context.heap.memsize[id]);
    json.field("retained", context.dominators.retained[id]);
    json.field("location", context.heap.site_label(id));
    json.end_object();
  }
  json.end_array();
}

// What the reader had to leave out or repair, one phrase per kind: "" for a clean dump.
std::string dump_problems_text(const Heap& heap) {
  std::vector<std::string> parts;
  auto add = [&](uint64_t count, std::string_view one, std::string_view many) {
    if (count > 0) parts.push_back(fmt::format("{} {}", count, count == 1 ? one : many));
  };
  add(heap.lost_root_lines, "ROOT line unreadable (reachability and retained sizes incomplete)",
      "ROOT lines unreadable (reachability and retained sizes incomplete)");
  add(heap.bad_value_count, "bad value skipped", "bad values skipped");
  add(heap.dangling_references, "reference to an absent object dropped",
      "references to absent objects dropped");
  add(heap.duplicate_addresses, "duplicate address", "duplicate addresses");
  add(heap.non_utf8_lines, "line with non-UTF-8 bytes read", "lines with non-UTF-8 bytes read");
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

std::string address_text(uint64_t address) { return fmt::format("{:#x}", address); }

std::string describe_object(const Heap& heap, const DominatorTree* dominators, ObjectId id) {
  std::string out = fmt::format("{} {} {}, {} bytes", address_text(heap.address[id]),
                                object_type_name(heap.type[id]), heap.object_label(id),
                                heap.memsize[id]);
  if (dominators != nullptr) out += fmt::format(" (retains {})", dominators->retained[id]);
  std::string site = heap.site_label(id);
  if (!site.empty()) out += fmt::format(" @ {}", site);
  return out;
}

std::string render_analysis_text(const ReportContext& context, const Analysis& analysis) {
  const Heap& heap = context.heap;
  std::string out;
  out += fmt::format("dump: {}\n", context.dump_name);
  out += fmt::format("lines: {} ({} bad, skipped)\n", heap.lines, heap.bad_line_count);
  if (std::string problems = dump_problems_text(heap); !problems.empty()) {
    out += fmt::format("dump problems: {}\n", problems);
  }
  out += fmt::format("objects: {}, memsize {} bytes\n", analysis.count, analysis.memsize);
  out += fmt::format("reachable from roots: {} objects, {} bytes\n", analysis.reachable_count,
                     analysis.reachable_memsize);
  out += fmt::format("kept alive only through machine_context: {} objects, {} bytes\n",
                     analysis.machine_context_only_count, analysis.machine_context_only_memsize);
  out += "roots:";
  for (const RootRow& root : analysis.roots) out += fmt::format(" {} {}", root.kind, root.count);
  out += "\n";
  if (heap.shape_count > 0) {
    out += fmt::format("shapes: {}, memsize {} bytes\n", heap.shape_count, heap.shape_memsize);
  }
  text_groups(out, "by type", analysis.by_type, context.top);
  text_groups(out, "by class", analysis.by_class, context.top);
  text_groups(out, "by location", analysis.by_location, context.top);
  text_groups(out, "by gem", analysis.by_gem, context.top);
  text_groups(out, "by generation", analysis.by_generation, context.top);
  text_objects(out, "biggest objects", context, analysis.biggest);
  text_objects(out, "top retained sizes", context, analysis.top_retained);
  return out;
}

std::string render_analysis_json(const ReportContext& context, const Analysis& analysis) {
  JsonWriter json;
  json.begin_object();
  json.field("dump", context.dump_name);
  json.field("lines", context.heap.lines);
  json.field("bad_lines", context.heap.bad_line_count);
  json.key("problems");
  json.begin_object();
  json.field("lost_root_lines", context.heap.lost_root_lines);
  json.field("bad_values", context.heap.bad_value_count);
  json.field("dangling_references", context.heap.dangling_references);
  json.field("duplicate_addresses", context.heap.duplicate_addresses);
  json.field("non_utf8_lines", context.heap.non_utf8_lines);
  json.end_object();
  json_count(json, "total", analysis.count, analysis.memsize);
  json_count(json, "reachable", analysis.reachable_count, analysis.reachable_memsize);
  json_count(json, "machine_context_only", analysis.machine_context_only_count,
             analysis.machine_context_only_memsize);
  json.key("roots");
  json.begin_array();
  for (const RootRow& root : analysis.roots) {
    json.begin_object();
    json.field("kind", root.kind);
    json.field("count", root.count);
    json.end_object();
  }
  json.end_array();
  json_groups(json, "by_type", analysis.by_type, context.top);
  json_groups(json, "by_class", analysis.by_class, context.top);
  json_groups(json, "by_location", analysis.by_location, context.top);
  json_groups(json, "by_gem", analysis.by_gem, context.top);
  json_groups(json, "by_generation", analysis.by_generation, context.top);
  json_objects(json, "biggest", context, analysis.biggest);
  json_objects(json, "top_retained", context, analysis.top_retained);
  json.end_object();
  return json.str() + "\n";
}

}  // namespace memprof::heap
