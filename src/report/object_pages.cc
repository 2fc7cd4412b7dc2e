#include "report/object_pages.h"

#include <algorithm>
#include <map>

#include "heap/analysis_report.h"
#include "heap/json_writer.h"
#include "heap/object_query.h"
#include "heap/reachability.h"

namespace memprof::report {
namespace {

using heap::ObjectId;

void summary_fields(heap::JsonWriter& json, const heap::Heap& heap, const heap::DominatorTree& tree, ObjectId id) {
  json.field("type", heap::object_type_name(heap.type[id]));
  json.field("name", heap.object_label(id));
  json.field("class", heap.class_label(id));
  json.field("memsize", heap.memsize[id]);
  json.field("retained", tree.retained[id]);
  json.field("location", heap.site_label(id));
  json.field_or_null("generation", heap::generation_of(heap, id));
}

}  // namespace

std::string object_pages_json(const heap::Heap& heap, const heap::Graph& graph,
                              const heap::DominatorTree& tree, const std::vector<ObjectId>& pages,
                              size_t listed) {
  const heap::RootPaths paths(graph, heap);
  std::map<ObjectId, bool> summaries;  // objects the pages mention, in address-stable id order
  heap::JsonWriter json;
  json.begin_object();
  auto address = [&](ObjectId id) { return heap::address_text(heap.address[id]); };
  auto list = [&](std::string_view key, const std::vector<ObjectId>& ids) {
    const size_t n = std::min(ids.size(), listed);
    json.key(key);
    json.begin_array();
    for (size_t i = 0; i < n; ++i) {
      json.value(address(ids[i]));
      summaries.emplace(ids[i], true);
    }
    json.end_array();
    json.field(std::string("more_") + std::string(key), ids.size() - n);
  };
  std::vector<ObjectId> unique_pages = pages;
  std::sort(unique_pages.begin(), unique_pages.end());
  unique_pages.erase(std::unique(unique_pages.begin(), unique_pages.end()), unique_pages.end());
  for (ObjectId id : unique_pages) {
    json.key(address(id));
    json.begin_object();
    summary_fields(json, heap, tree, id);
    auto refs = heap.references(id);
    list("references", std::vector<ObjectId>(refs.begin(), refs.end()));
    list("retainers", heap::retainers_of(graph, id));
    const heap::RootPath path = paths.to(id);
    json.field_or_null("root", heap::root_kind_of(heap, path));
    json.key("path");
    json.begin_array();
    for (const heap::PathEntry& entry : heap::collapse_runs(heap, path.objects, false)) {
      if (entry.id == heap::kNoObject) {
        json.begin_object();
        json.field("collapsed", entry.collapsed);
        json.field("name", entry.name);
        json.end_object();
      } else {
        json.value(address(entry.id));
        summaries.emplace(entry.id, true);
      }
    }
    json.end_array();
    json.end_object();
  }
  for (const auto& [id, unused] : summaries) {
    if (std::binary_search(unique_pages.begin(), unique_pages.end(), id)) continue;
    json.key(address(id));
    json.begin_object();
    summary_fields(json, heap, tree, id);
    json.flag("summary", true);
    json.end_object();
  }
  json.end_object();
  return json.str();
}

}  // namespace memprof::report
