#include "heap/object_query.h"

#include <algorithm>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "heap/analysis_report.h"
#include "heap/json_writer.h"
#include "heap/reachability.h"
#include "heap/record_parser.h"
#include "heap/units.h"

namespace memprof::heap {
namespace {

bool via_class(const Heap& heap, ObjectId from, ObjectId to) {
  if (from >= heap.size() || heap.class_of[from] != to) return false;
  auto refs = heap.references(from);
  return std::find(refs.begin(), refs.end(), to) == refs.end();
}

constexpr std::string_view kMachineContextOnly = "  [kept alive only through machine_context]";

// Runs longer than this of one class are collapsed to their first and last kRunEnds hops.
constexpr size_t kLongestRun = 6;
constexpr size_t kRunEnds = 2;
// Lists of retainers or references show this many objects, then counts by class.
constexpr size_t kListed = 20;

}  // namespace

std::vector<PathEntry> collapse_runs(const Heap& heap, const std::vector<ObjectId>& path, bool full) {
  std::vector<PathEntry> out;
  for (size_t begin = 0, end; begin < path.size(); begin = end) {
    const std::string name = heap.object_label(path[begin]);
    end = begin + 1;
    while (end < path.size() && heap.object_label(path[end]) == name) ++end;
    const size_t run = end - begin;
    if (full || run <= kLongestRun) {
      for (size_t i = begin; i < end; ++i) out.push_back({path[i], 0, {}});
      continue;
    }
    for (size_t i = begin; i < begin + kRunEnds; ++i) out.push_back({path[i], 0, {}});
    out.push_back({kNoObject, run - 2 * kRunEnds, name});
    for (size_t i = end - kRunEnds; i < end; ++i) out.push_back({path[i], 0, {}});
  }
  return out;
}

std::vector<ObjectId> retainers_of(const Graph& graph, ObjectId target) {
  std::vector<ObjectId> retainers;
  for (ObjectId from : graph.predecessors(target)) {
    if (from != graph.super_root && from != target) retainers.push_back(from);  // self: not a retainer
  }
  std::sort(retainers.begin(), retainers.end());
  retainers.erase(std::unique(retainers.begin(), retainers.end()), retainers.end());
  return retainers;
}

namespace {

// The objects of a list beyond the first kListed, counted by class, most first.
std::vector<std::pair<std::string, uint64_t>> rest_by_class(const Heap& heap, const std::vector<ObjectId>& ids,
                                                            size_t shown_count) {
  std::map<std::string, uint64_t> counts;
  for (size_t i = shown_count; i < ids.size(); ++i) ++counts[heap.object_label(ids[i])];
  std::vector<std::pair<std::string, uint64_t>> rest(counts.begin(), counts.end());
  std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return rest;
}

std::string rest_text(const std::vector<std::pair<std::string, uint64_t>>& rest, size_t more) {
  std::vector<std::string> parts;
  for (const auto& [name, count] : rest) parts.push_back(fmt::format("{} {}", count_text(count), name));
  return fmt::format("  ... {} more: {}\n", count_text(more), fmt::join(parts, ", "));
}

void json_object(JsonWriter& json, const Heap& heap, const DominatorTree* tree, ObjectId id) {
  json.begin_object();
  json.field("address", address_text(heap.address[id]));
  json.field("type", object_type_name(heap.type[id]));
  json.field("class", heap.class_label(id));
  json.field("name", heap.object_label(id));
  json.field("memsize", heap.memsize[id]);
  if (tree != nullptr) json.field("retained", tree->retained[id]);
  json.field("location", heap.site_label(id));
  json.end_object();
}

// A list of objects, the first kListed of them unless `full`, then the rest counted by class.
void json_list(JsonWriter& json, std::string_view key, const Heap& heap, const DominatorTree* tree,
               const std::vector<ObjectId>& ids, bool full) {
  const size_t n = full ? ids.size() : std::min(ids.size(), kListed);
  json.key(key);
  json.begin_array();
  for (size_t i = 0; i < n; ++i) json_object(json, heap, tree, ids[i]);
  json.end_array();
  json.field(fmt::format("more_{}", key), ids.size() - n);
  json.key(fmt::format("more_{}_by_class", key));
  json.begin_array();
  for (const auto& [name, count] : rest_by_class(heap, ids, n)) {
    json.begin_object();
    json.field("name", name);
    json.field("count", count);
    json.end_object();
  }
  json.end_array();
}

void text_list(std::string& out, std::string_view title, const Heap& heap, const DominatorTree* tree,
               const std::vector<ObjectId>& ids, bool full,
               const std::function<std::string(ObjectId)>& mark) {
  out += fmt::format("{} ({})\n", title, count_text(ids.size()));
  const size_t n = full ? ids.size() : std::min(ids.size(), kListed);
  for (size_t i = 0; i < n; ++i) out += "  " + describe_object(heap, tree, ids[i]) + mark(ids[i]) + "\n";
  if (n < ids.size()) out += rest_text(rest_by_class(heap, ids, n), ids.size() - n);
}

std::vector<std::string> root_kinds_of(const Heap& heap, ObjectId target) {
  std::vector<std::string> kinds;
  for (const RootSet& root : heap.roots) {
    if (std::find(root.targets.begin(), root.targets.end(), target) == root.targets.end()) continue;
    std::string kind(heap.str(root.kind));
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  }
  return kinds;
}

// Why nothing reaches an object: usually it is garbage; in a dump without ROOT lines nothing
// is reachable at all.
std::string_view unreachable_reason(const Heap& heap) {
  return heap.roots.empty() ? "the dump has no ROOT lines" : "garbage the GC has not swept yet";
}

std::vector<uint8_t> reachable_marks(const Heap& heap, const DominatorTree& tree) {
  std::vector<uint8_t> reachable(heap.size(), 0);
  for (ObjectId id = 0; id < heap.size(); ++id) reachable[id] = tree.reachable(id);
  return reachable;
}

void text_path(std::string& out, const Heap& heap, const Graph& graph, ObjectId target,
               const QueryOptions& options, const MachineContextOnly& mc) {
  RootPath path = shortest_root_path(graph, heap, target);
  if (path.objects.empty()) {
    out += fmt::format("{} is not reachable from any root ({})\n",
                       address_text(heap.address[target]), unreachable_reason(heap));
    return;
  }
  out += fmt::format("root {}\n", heap.str(path.root_kind));
  ObjectId previous = kNoObject;
  for (const PathEntry& entry : collapse_runs(heap, path.objects, options.full)) {
    if (entry.id == kNoObject) {
      out += fmt::format("... {} more {} ...\n", count_text(entry.collapsed), entry.name);
      previous = kNoObject;
      continue;
    }
    out += describe_object(heap, nullptr, entry.id);
    if (previous != kNoObject && via_class(heap, previous, entry.id)) out += " (via class)";
    if (mc.only[entry.id]) out += kMachineContextOnly;
    out += '\n';
    previous = entry.id;
  }
}

void json_path(JsonWriter& json, const Heap& heap, const Graph& graph, ObjectId target,
               const QueryOptions& options, const MachineContextOnly& mc) {
  RootPath path = shortest_root_path(graph, heap, target);
  json.flag("reachable", !path.objects.empty());
  json.field_or_null("root", root_kind_of(heap, path));
  json.key("path");
  json.begin_array();
  ObjectId previous = kNoObject;
  for (const PathEntry& entry : collapse_runs(heap, path.objects, options.full)) {
    json.begin_object();
    if (entry.id == kNoObject) {
      json.field("collapsed", entry.collapsed);
      json.field("name", entry.name);
    } else {
      json.field("address", address_text(heap.address[entry.id]));
      json.field("type", object_type_name(heap.type[entry.id]));
      json.field("name", heap.object_label(entry.id));
      json.field("memsize", heap.memsize[entry.id]);
      json.field("location", heap.site_label(entry.id));
      json.flag("via_class", previous != kNoObject && via_class(heap, previous, entry.id));
      json.flag("machine_context_only", mc.only[entry.id]);
    }
    json.end_object();
    previous = entry.id;
  }
  json.end_array();
}

std::vector<std::string> flag_names(uint16_t flags) {
  static constexpr std::pair<uint16_t, std::string_view> kNames[] = {
      {kFlagWbProtected, "wb_protected"}, {kFlagOld, "old"}, {kFlagUncollectible, "uncollectible"},
      {kFlagMarked, "marked"}, {kFlagMarking, "marking"}, {kFlagPinned, "pinned"},
      {kFlagFrozen, "frozen"}, {kFlagEmbedded, "embedded"}, {kFlagShared, "shared"},
      {kFlagFstring, "fstring"}, {kFlagSingleton, "singleton"}, {kFlagChilled, "chilled"},
      {kFlagMemprofOwn, "memprof_own"}};
  std::vector<std::string> names;
  for (auto [bit, name] : kNames) {
    if (flags & bit) names.emplace_back(name);
  }
  return names;
}

// The value of a String or the name of a Symbol, when the dump holds it.
const StringValue* string_value(const Heap& heap, ObjectId id) {
  const auto& values = heap.type[id] == ObjectType::kSymbol ? heap.symbol_values : heap.string_values;
  auto found = std::lower_bound(values.begin(), values.end(), id,
                                [](const StringValue& v, ObjectId target) { return v.id < target; });
  return found != values.end() && found->id == id ? &*found : nullptr;
}

}  // namespace

Result<ObjectId> find_object_argument(const Heap& heap, std::string_view address,
                                      std::string_view dump_name) {
  std::string text(address);
  if (!text.starts_with("0x") && !text.starts_with("0X")) text = "0x" + text;
  uint64_t value = parse_address_text(text);
  if (value == 0) return err("{}: not an address", address);
  ObjectId id = heap.find(value);
  if (id == kNoObject) return err("{}: no object at this address in {}", address, dump_name);
  return id;
}

std::string render_root_path(const Heap& heap, const Graph& graph, ObjectId target,
                             const QueryOptions& options) {
  std::vector<uint8_t> all(heap.size(), 1);
  MachineContextOnly mc = machine_context_only(graph, heap, all);
  if (!options.json) {
    std::string out;
    text_path(out, heap, graph, target, options, mc);
    return out;
  }
  JsonWriter json;
  json.begin_object();
  json.field("target", address_text(heap.address[target]));
  json_path(json, heap, graph, target, options, mc);
  json.end_object();
  return json.str() + "\n";
}

namespace {

// "immediate_dominator": the object, "roots" for a root's own child, null when unreachable.
void json_immediate_dominator(JsonWriter& json, const Heap& heap, const Graph& graph,
                              const DominatorTree& tree, ObjectId target) {
  json.key("immediate_dominator");
  const ObjectId idom = tree.reachable(target) ? tree.idom[target] : kNoObject;
  if (idom == kNoObject || idom == graph.super_root) {
    json.raw(idom == graph.super_root ? "\"roots\"" : "null");
  } else {
    json_object(json, heap, &tree, idom);
  }
}

}  // namespace

std::string render_retainers(const Heap& heap, const Graph& graph, const DominatorTree& tree,
                             ObjectId target, const QueryOptions& options) {
  MachineContextOnly mc = machine_context_only(graph, heap, reachable_marks(heap, tree));
  const std::vector<std::string> kinds = root_kinds_of(heap, target);
  const std::vector<ObjectId> retainers = retainers_of(graph, target);
  const bool reachable = tree.reachable(target);
  const ObjectId idom = reachable ? tree.idom[target] : kNoObject;
  if (options.json) {
    JsonWriter json;
    json.begin_object();
    json.key("object");
    json_object(json, heap, &tree, target);
    json.flag("reachable", reachable);
    json.flag("machine_context_only", mc.only[target]);
    json_immediate_dominator(json, heap, graph, tree, target);
    json.key("roots");
    json.begin_array();
    for (const std::string& kind : kinds) json.value(kind);
    json.end_array();
    json_list(json, "retainers", heap, &tree, retainers, options.full);
    json.end_object();
    return json.str() + "\n";
  }
  std::string out = describe_object(heap, &tree, target) + '\n';
  if (!reachable) {
    out += fmt::format("not reachable from any root ({})\n", unreachable_reason(heap));
  } else {
    out += fmt::format("kept alive only through machine_context: {}\n", mc.only[target] ? "yes" : "no");
    out += idom == graph.super_root
               ? std::string("immediate dominator: the roots\n")
               : fmt::format("immediate dominator: {}\n", describe_object(heap, &tree, idom));
  }
  out += fmt::format("retained by {} root kind{} and {} object{}\n", kinds.size(),
                     kinds.size() == 1 ? "" : "s", count_text(retainers.size()),
                     retainers.size() == 1 ? "" : "s");
  for (const std::string& kind : kinds) out += fmt::format("  root {}\n", kind);
  const size_t n = options.full ? retainers.size() : std::min(retainers.size(), kListed);
  for (size_t i = 0; i < n; ++i) {
    const ObjectId from = retainers[i];
    out += "  " + describe_object(heap, &tree, from);
    if (via_class(heap, from, target)) out += " (as its class)";
    if (!tree.reachable(from)) out += "  [unreachable]";
    if (mc.only[from]) out += kMachineContextOnly;
    out += '\n';
  }
  if (n < retainers.size()) out += rest_text(rest_by_class(heap, retainers, n), retainers.size() - n);
  return out;
}

std::string render_object(const Heap& heap, const Graph& graph, const DominatorTree& tree,
                          ObjectId target, const QueryOptions& options) {
  MachineContextOnly mc = machine_context_only(graph, heap, reachable_marks(heap, tree));
  std::vector<ObjectId> references(heap.references(target).begin(), heap.references(target).end());
  const std::vector<ObjectId> retainers = retainers_of(graph, target);
  const ObjectId klass = heap.class_of[target];
  const StringValue* value = string_value(heap, target);
  const uint32_t generation = heap.generation[target];
  if (options.json) {
    JsonWriter json;
    json.begin_object();
    json.key("object");
    json_object(json, heap, &tree, target);
    json.field("class_address", klass == kNoObject ? std::string() : address_text(heap.address[klass]));
    json.field_or_null("generation", generation_of(heap, target));
    json.key("flags");
    json.begin_array();
    for (const std::string& flag : flag_names(heap.flags[target])) json.value(flag);
    json.end_array();
    json.field("detail", heap.str(heap.detail[target]));
    json.field("slot_size", uint64_t{heap.slot_size[target]});
    if (value != nullptr) json.field("value_head", value->head_text());
    json.flag("machine_context_only", mc.only[target]);
    json_immediate_dominator(json, heap, graph, tree, target);
    json_list(json, "references", heap, &tree, references, options.full);
    json_list(json, "retainers", heap, &tree, retainers, options.full);
    json_path(json, heap, graph, target, options, mc);
    json.end_object();
    return json.str() + "\n";
  }
  std::string out = describe_object(heap, &tree, target) + "\n";
  out += fmt::format("  type {}, class {}{}\n", object_type_name(heap.type[target]), heap.class_label(target),
                     klass == kNoObject ? "" : fmt::format(" ({})", address_text(heap.address[klass])));
  out += fmt::format("  memsize {}, retains {} ({}){}\n", byte_count_text(heap.memsize[target]),
                     byte_count_text(tree.retained[target]), bytes_text(tree.retained[target]),
                     mc.only[target] ? ", kept alive only through machine_context" : "");
  const std::string site = heap.site_label(target);
  out += fmt::format("  allocated {}, generation {}\n", site.empty() ? "at no known site" : "at " + site,
                     generation == kNoGeneration ? "unknown" : std::to_string(generation));
  const std::vector<std::string> flags = flag_names(heap.flags[target]);
  out += flags.empty() ? std::string("  flags: none\n") : fmt::format("  flags: {}\n", fmt::join(flags, " "));
  if (heap.detail[target] != 0) {
    out += fmt::format("  {}: {}\n", heap.type[target] == ObjectType::kImemo ? "imemo_type" : "struct",
                       heap.str(heap.detail[target]));
  }
  if (heap.slot_size[target] != 0) out += fmt::format("  slot_size: {}\n", heap.slot_size[target]);
  if (value != nullptr) {
    // A Symbol as Ruby inspects one that needs quotes: :"name".
    const std::string_view open = heap.type[target] == ObjectType::kSymbol ? ":\"" : "\"";
    out += fmt::format("  value: {}{}{}\"\n", open, value->head_text(),
                       value->length > StringValue::kHeadSize ? "..." : "");
  }
  if (tree.reachable(target)) {  // as retainers says it: a root's own children are the roots'
    out += tree.idom[target] == graph.super_root
               ? std::string("  immediate dominator: the roots\n")
               : fmt::format("  immediate dominator: {}\n", describe_object(heap, &tree, tree.idom[target]));
  }
  auto no_mark = [](ObjectId) { return std::string(); };
  text_list(out, "references", heap, &tree, references, options.full, no_mark);
  const std::vector<std::string> kinds = root_kinds_of(heap, target);
  if (!kinds.empty()) out += fmt::format("roots: {}\n", fmt::join(kinds, " "));
  text_list(out, "retainers", heap, &tree, retainers, options.full, [&](ObjectId from) {
    return std::string(via_class(heap, from, target) ? " (as its class)" : "");
  });
  out += "path from a root:\n";
  text_path(out, heap, graph, target, options, mc);
  return out;
}

}  // namespace memprof::heap
