#include "heap/analysis_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unordered_map>

#include "heap/json_writer.h"
#include "heap/units.h"

namespace memprof::heap {
namespace {

size_t shown(size_t available, size_t top) { return top == 0 ? available : std::min(available, top); }

std::string samples_text(const Heap& heap, const std::vector<ObjectId>& samples) {
  std::vector<std::string> addresses;
  for (ObjectId id : samples) addresses.push_back(address_text(heap.address[id]));
  return fmt::format("{:>37}e.g. {}\n", "", fmt::join(addresses, " "));
}

void text_groups(std::string& out, std::string_view title, const ReportContext& context,
                 const std::vector<GroupRow>& rows) {
  size_t n = shown(rows.size(), context.top);
  out += fmt::format("\n{} ({} of {})\n", title, n, rows.size());
  out += fmt::format("{:>12} {:>11} {:>11}  {}\n", "count", "memsize", "retained", "name");
  for (size_t i = 0; i < n; ++i) {
    const GroupRow& row = rows[i];
    out += fmt::format("{:>12} {:>11} {:>11}  {}\n", count_text(row.count), bytes_text(row.memsize),
                       bytes_text(row.retained), row.name);
    if (!row.samples.empty()) out += samples_text(context.heap, row.samples);
  }
}

// One line per object; `extra` adds a leading column (e.g. a reference count) when given.
template <typename Extra>
void text_objects(std::string& out, std::string_view title, const ReportContext& context,
                  const std::vector<ObjectId>& ids, std::string_view extra_heading, Extra extra) {
  out += fmt::format("\n{} ({})\n", title, ids.size());
  if (ids.empty()) return;
  out += fmt::format("{}{:>11} {:>11}  {:<18} {:<8} {}\n", extra_heading, "memsize", "retained",
                     "address", "type", "name @ location");
  const Heap& heap = context.heap;
  for (ObjectId id : ids) {
    std::string site = heap.site_label(id);
    out += fmt::format("{}{:>11} {:>11}  {:<18} {:<8} {}{}{}\n", extra(id), bytes_text(heap.memsize[id]),
                       bytes_text(context.dominators.retained[id]), address_text(heap.address[id]),
                       object_type_name(heap.type[id]), heap.object_label(id), site.empty() ? "" : " @ ",
                       site);
  }
}

void text_objects(std::string& out, std::string_view title, const ReportContext& context,
                  const std::vector<ObjectId>& ids) {
  text_objects(out, title, context, ids, "", [](ObjectId) { return std::string(); });
}

// A duplicated value as the dump writes it, quoted, cut after its first bytes when long.
std::string quoted_value(const DuplicateString& dup) {
  return dup.cut ? fmt::format("\"{}...\" ({} bytes)", dup.value, count_text(dup.length))
                 : fmt::format("\"{}\"", dup.value);
}

void text_duplicates(std::string& out, const ReportContext& context, const std::vector<DuplicateString>& dups) {
  out += fmt::format("\nduplicate strings ({})\n", dups.size());
  if (dups.empty()) return;
  out += fmt::format("{:>12} {:>11} {:>11}  {}\n", "copies", "memsize", "wasted", "value");
  for (const DuplicateString& dup : dups) {
    out += fmt::format("{:>12} {:>11} {:>11}  {}\n", count_text(dup.count), bytes_text(dup.memsize),
                       bytes_text(dup.wasted), quoted_value(dup));
    if (!dup.samples.empty()) out += samples_text(context.heap, dup.samples);
  }
}

void json_samples(JsonWriter& json, const Heap& heap, const std::vector<ObjectId>& samples) {
  if (samples.empty()) return;
  json.key("samples");
  json.begin_array();
  for (ObjectId id : samples) json.value(address_text(heap.address[id]));
  json.end_array();
}

void json_groups(JsonWriter& json, std::string_view name, const ReportContext& context,
                 const std::vector<GroupRow>& rows) {
  json.key(name);
  json.begin_array();
  for (size_t i = 0, n = shown(rows.size(), context.top); i < n; ++i) {
    json.begin_object();
    json.field("name", rows[i].name);
    json.field("count", rows[i].count);
    json.field("memsize", rows[i].memsize);
    json.field("retained", rows[i].retained);
    json_samples(json, context.heap, rows[i].samples);
    json.end_object();
  }
  json.end_array();
}

void json_object_fields(JsonWriter& json, const ReportContext& context, ObjectId id) {
  json.field("address", address_text(context.heap.address[id]));
  json.field("type", object_type_name(context.heap.type[id]));
  json.field("class", context.heap.class_label(id));
  json.field("name", context.heap.object_label(id));
  json.field("memsize", context.heap.memsize[id]);
  json.field("retained", context.dominators.retained[id]);
  json.field("location", context.heap.site_label(id));
}

void json_objects(JsonWriter& json, std::string_view name, const ReportContext& context,
                  const std::vector<ObjectId>& ids) {
  json.key(name);
  json.begin_array();
  for (ObjectId id : ids) {
    json.begin_object();
    json_object_fields(json, context, id);
    json.end_object();
  }
  json.end_array();
}

// What the reader had to leave out or repair, one phrase per kind: "" for a clean dump.
std::string dump_problems_text(const Heap& heap) {
  std::vector<std::string> parts;
  auto add = [&](uint64_t count, std::string_view one, std::string_view many) {
    if (count > 0) parts.push_back(fmt::format("{} {}", count_text(count), count == 1 ? one : many));
  };
  if (!heap.cut_short.empty())
    parts.push_back(fmt::format("{} after {} (the rest of the dump is missing)", heap.cut_short,
                                byte_count_text(heap.input_bytes)));
  add(heap.lost_root_lines, "ROOT line unreadable (reachability and retained sizes incomplete)",
      "ROOT lines unreadable (reachability and retained sizes incomplete)");
  add(heap.bad_value_count, "bad value skipped", "bad values skipped");
  add(heap.dangling_references, "reference to an absent object dropped",
      "references to absent objects dropped");
  add(heap.duplicate_addresses, "duplicate address", "duplicate addresses");
  add(heap.non_utf8_lines, "line with non-UTF-8 bytes read", "lines with non-UTF-8 bytes read");
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string objects_text(uint64_t count, uint64_t memsize) {
  return fmt::format("{} object{}, {}", count_text(count), count == 1 ? "" : "s", bytes_text(memsize));
}

}  // namespace

std::string address_text(uint64_t address) { return fmt::format("{:#x}", address); }

std::string describe_object(const Heap& heap, const DominatorTree* dominators, ObjectId id) {
  std::string out = fmt::format("{} {} {}, {}", address_text(heap.address[id]),
                                object_type_name(heap.type[id]), heap.object_label(id),
                                byte_count_text(heap.memsize[id]));
  if (dominators != nullptr) out += fmt::format(" (retains {})", byte_count_text(dominators->retained[id]));
  std::string site = heap.site_label(id);
  if (!site.empty()) out += fmt::format(" @ {}", site);
  return out;
}

std::string render_analysis_text(const ReportContext& context, const Analysis& analysis) {
  const Heap& heap = context.heap;
  std::string out;
  out += fmt::format("dump: {}\n", context.dump_name);
  out += fmt::format("lines: {}", count_text(heap.lines));
  if (heap.bad_line_count > 0) out += fmt::format(" ({} bad, skipped)", count_text(heap.bad_line_count));
  out += "\n";
  if (std::string problems = dump_problems_text(heap); !problems.empty()) {
    out += fmt::format("dump problems: {}\n", problems);
  }
  if (!context.filter.empty()) {
    out += fmt::format("selected: {} ({} of the dump's {} objects)\n", context.filter,
                       count_text(analysis.count), count_text(heap.size()));
  }
  out += fmt::format("objects: {}, {} ({} bytes)\n", count_text(analysis.count),
                     bytes_text(analysis.memsize), count_text(analysis.memsize));
  out += fmt::format("reachable from roots: {}\n", objects_text(analysis.reachable_count, analysis.reachable_memsize));
  if (heap.reachability_known() && analysis.reachable_count < analysis.count) {
    out += fmt::format("unreachable (garbage the GC had not swept yet): {}; not in biggest objects\n",
                       objects_text(analysis.count - analysis.reachable_count,
                                    analysis.memsize - analysis.reachable_memsize));
  }
  out += fmt::format("kept alive only through machine_context: {}\n",
                     objects_text(analysis.machine_context_only_count, analysis.machine_context_only_memsize));
  out += "roots:";
  for (const RootRow& root : analysis.roots) out += fmt::format(" {} {}", root.kind, count_text(root.count));
  if (heap.roots.empty() && heap.lost_root_lines == 0)
    out += " none (no ROOT lines: retained sizes unknown, shown as 0)";
  out += "\n";
  if (heap.shape_count > 0) {
    out += fmt::format("shapes: {}, memsize {}\n", count_text(heap.shape_count), bytes_text(heap.shape_memsize));
  }
  if (heap.free_slot_count > 0)
    out += fmt::format("free slots: {} (listed by dump_all(full: true); not objects)\n",
                       count_text(heap.free_slot_count));
  text_groups(out, "by type", context, analysis.by_type);
  text_groups(out, "by class", context, analysis.by_class);
  text_groups(out, "by location", context, analysis.by_location);
  text_groups(out, "by gem", context, analysis.by_gem);
  text_groups(out, "by generation", context, analysis.by_generation);
  text_objects(out, "biggest objects", context, analysis.biggest);
  text_objects(out, "top retained sizes (one per dominator subtree)", context, analysis.top_retained);
  text_objects(out, "kept alive only through machine_context", context, analysis.machine_context_only_objects);
  std::vector<ObjectId> referenced;
  std::unordered_map<ObjectId, uint64_t> referrers;
  for (auto [id, count] : analysis.most_referenced) {
    referenced.push_back(id);
    referrers[id] = count;
  }
  text_objects(out, "most referenced objects", context, referenced, fmt::format("{:>12} ", "referrers"),
               [&](ObjectId id) { return fmt::format("{:>12} ", count_text(referrers[id])); });
  text_duplicates(out, context, analysis.duplicate_strings);
  return out;
}

std::string render_analysis_json(const ReportContext& context, const Analysis& analysis) {
  JsonWriter json;
  json.begin_object();
  json.field("dump", context.dump_name);
  if (!context.filter.empty()) json.field("filter", context.filter);
  json.field("lines", context.heap.lines);
  json.field("bad_lines", context.heap.bad_line_count);
  json.key("problems");
  json.begin_object();
  json.field("lost_root_lines", context.heap.lost_root_lines);
  json.field("bad_values", context.heap.bad_value_count);
  json.field("dangling_references", context.heap.dangling_references);
  json.field("duplicate_addresses", context.heap.duplicate_addresses);
  json.field("non_utf8_lines", context.heap.non_utf8_lines);
  if (!context.heap.cut_short.empty()) json.field("cut_short", context.heap.cut_short);
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
  json.field("free_slots", context.heap.free_slot_count);
  json_count(json, "shapes", context.heap.shape_count, context.heap.shape_memsize);  // Ruby 3.3+
  json_groups(json, "by_type", context, analysis.by_type);
  json_groups(json, "by_class", context, analysis.by_class);
  json_groups(json, "by_location", context, analysis.by_location);
  json_groups(json, "by_gem", context, analysis.by_gem);
  json_groups(json, "by_generation", context, analysis.by_generation);
  json_objects(json, "biggest", context, analysis.biggest);
  json_objects(json, "top_retained", context, analysis.top_retained);
  json_objects(json, "machine_context_only_objects", context, analysis.machine_context_only_objects);
  json.key("most_referenced");
  json.begin_array();
  for (auto [id, count] : analysis.most_referenced) {
    json.begin_object();
    json_object_fields(json, context, id);
    json.field("referrers", count);
    json.end_object();
  }
  json.end_array();
  json.key("duplicate_strings");
  json.begin_array();
  for (const DuplicateString& dup : analysis.duplicate_strings) {
    json.begin_object();
    json.field("value", dup.value);
    json.flag("cut", dup.cut);
    json.field("length", dup.length);
    json.field("count", dup.count);
    json.field("memsize", dup.memsize);
    json.field("wasted", dup.wasted);
    json_samples(json, context.heap, dup.samples);
    json.end_object();
  }
  json.end_array();
  json.end_object();
  return json.str() + "\n";
}

}  // namespace memprof::heap
