#include "heap/object_query.h"

#include <algorithm>

#include <fmt/format.h>

#include "heap/analysis_report.h"
#include "heap/reachability.h"
#include "heap/record_parser.h"

namespace memprof::heap {
namespace {

bool via_class(const Heap& heap, ObjectId from, ObjectId to) {
  if (from >= heap.size() || heap.class_of[from] != to) return false;
  auto refs = heap.references(from);
  return std::find(refs.begin(), refs.end(), to) == refs.end();
}

constexpr std::string_view kMachineContextOnly = "  [kept alive only through machine_context]";

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

std::string render_root_path(const Heap& heap, const Graph& graph, ObjectId target) {
  RootPath path = shortest_root_path(graph, heap, target);
  if (path.objects.empty()) {
    return fmt::format("{} is not reachable from any root (garbage the GC has not swept yet)\n",
                       address_text(heap.address[target]));
  }
  std::vector<uint8_t> reachable(heap.size(), 1);
  MachineContextOnly mc = machine_context_only(graph, heap, reachable);
  std::string out = fmt::format("root {}\n", heap.str(path.root_kind));
  for (size_t i = 0; i < path.objects.size(); ++i) {
    ObjectId id = path.objects[i];
    out += describe_object(heap, nullptr, id);
    if (i > 0 && via_class(heap, path.objects[i - 1], id)) out += " (via class)";
    if (mc.only[id]) out += kMachineContextOnly;
    out += '\n';
  }
  return out;
}

std::string render_retainers(const Heap& heap, const Graph& graph, const DominatorTree& tree,
                             ObjectId target) {
  std::vector<uint8_t> reachable(heap.size(), 0);
  for (ObjectId id = 0; id < heap.size(); ++id) reachable[id] = tree.reachable(id);
  MachineContextOnly mc = machine_context_only(graph, heap, reachable);

  std::string out = describe_object(heap, &tree, target) + '\n';
  if (!tree.reachable(target)) {
    out += "not reachable from any root (garbage the GC has not swept yet)\n";
  } else {
    out += fmt::format("kept alive only through machine_context: {}\n", mc.only[target] ? "yes" : "no");
    ObjectId idom = tree.idom[target];
    out += idom == graph.super_root
               ? std::string("immediate dominator: the roots\n")
               : fmt::format("immediate dominator: {}\n", describe_object(heap, &tree, idom));
  }

  std::vector<std::string> root_kinds;
  for (const RootSet& root : heap.roots) {
    if (std::find(root.targets.begin(), root.targets.end(), target) == root.targets.end()) continue;
    std::string kind(heap.str(root.kind));
    if (std::find(root_kinds.begin(), root_kinds.end(), kind) == root_kinds.end()) root_kinds.push_back(kind);
  }
  std::vector<ObjectId> retainers;
  for (ObjectId from : graph.predecessors(target)) {
    if (from != graph.super_root) retainers.push_back(from);
  }
  std::sort(retainers.begin(), retainers.end());
  retainers.erase(std::unique(retainers.begin(), retainers.end()), retainers.end());

  out += fmt::format("retained by {} root kind{} and {} object{}\n", root_kinds.size(),
                     root_kinds.size() == 1 ? "" : "s", retainers.size(),
                     retainers.size() == 1 ? "" : "s");
  for (const std::string& kind : root_kinds) out += fmt::format("  root {}\n", kind);
  for (ObjectId from : retainers) {
    out += "  " + describe_object(heap, &tree, from);
    if (via_class(heap, from, target)) out += " (as its class)";
    if (!tree.reachable(from)) out += "  [unreachable]";
    if (mc.only[from]) out += kMachineContextOnly;
    out += '\n';
  }
  return out;
}

}  // namespace memprof::heap
