#include "report/html_report.h"

#include <algorithm>

#include "heap/analysis.h"
#include "heap/analysis_report.h"
#include "heap/dominators.h"
#include "heap/graph.h"
#include "heap/json_writer.h"
#include "report/base64.h"
#include "report/html_page.h"
#include "report/object_pages.h"
#include "report/png_encoder.h"
#include "report/retained_groups.h"

namespace memprof::report {
namespace {

// The page's own data next to analyze's: treemap groups and what the heap map shows.
std::string report_json(const std::vector<RetainedGroup>& groups, const HeapMapDrawing* drawing) {
  heap::JsonWriter json;
  json.begin_object();
  json.key("treemap");
  json.begin_array();
  for (const RetainedGroup& group : groups) {
    json.begin_object();
    json.field("name", group.name);
    json.field("retained", group.retained);
    json.field("objects", group.objects);
    json.end_object();
  }
  json.end_array();
  json.key("heapmap");
  if (drawing == nullptr) {
    json.raw("null");
  } else {
    json.begin_object();
    json.field("pages", drawing->pages);
    json.field("slots", drawing->slots);
    json.field("objects", drawing->objects);
    json.field("pinned", drawing->pinned);
    json.field("layout", drawing->layout.layout->name);
    json.field("reason", drawing->layout.reason);
    json.field("width", static_cast<uint64_t>(drawing->image.width()));
    json.field("height", static_cast<uint64_t>(drawing->image.height()));
    json.key("pools");
    json.begin_array();
    for (const SizePoolSummary& pool : drawing->pools) {
      json.begin_object();
      json.field("slot_size", uint64_t{pool.slot_size});
      json.field("pages", pool.pages);
      json.field("slots", pool.slots);
      json.field("objects", pool.objects);
      json.end_object();
    }
    json.end_array();
    json.end_object();
  }
  json.end_object();
  return json.str();
}

// Every object the page links to: the samples of the group rows it shows and the object lists.
std::vector<heap::ObjectId> linked_objects(const heap::Analysis& analysis, size_t top) {
  std::vector<heap::ObjectId> ids;
  for (const auto* rows : {&analysis.by_type, &analysis.by_class, &analysis.by_location,
                           &analysis.by_gem, &analysis.by_generation}) {
    for (size_t i = 0; i < std::min(top, rows->size()); ++i) {
      ids.insert(ids.end(), (*rows)[i].samples.begin(), (*rows)[i].samples.end());
    }
  }
  for (const auto* list : {&analysis.biggest, &analysis.top_retained, &analysis.machine_context_only_objects}) {
    ids.insert(ids.end(), list->begin(), list->end());
  }
  for (auto [id, count] : analysis.most_referenced) ids.push_back(id);
  for (const heap::DuplicateString& dup : analysis.duplicate_strings) {
    ids.insert(ids.end(), dup.samples.begin(), dup.samples.end());
  }
  return ids;
}

}  // namespace

Result<HtmlReport> render_html_report(std::string_view dump_name, const heap::Heap& heap,
                                      const HtmlReportOptions& options) {
  const heap::Graph graph = heap::Graph::build(heap);
  const heap::DominatorTree tree = heap::DominatorTree::compute(graph, heap);
  // The page sums the per-type rows to check them against the totals, so that list must be
  // complete: there are never more rows than object types.
  const size_t top = options.top == 0
                         ? heap.size()
                         : std::max(options.top, static_cast<size_t>(heap::kObjectTypeCount));
  const heap::Analysis analysis =
      heap::analyze_heap(heap, tree, {.top = top, .samples = options.samples});
  const heap::ReportContext context{dump_name, heap, tree, top};
  const std::string analysis_json = heap::render_analysis_json(context, analysis);
  const std::string objects_json =
      object_pages_json(heap, graph, tree, linked_objects(analysis, top), options.listed);
  const std::vector<RetainedGroup> groups =
      retained_by_top_level_class(heap, tree, options.treemap_groups);

  HtmlReport report;
  report.objects = heap.size();
  report.treemap_groups = groups.size();

  std::string png_base64;
  auto drawing = draw_heap_map(heap, options.heapmap);
  const HeapMapDrawing* drawn = nullptr;
  if (drawing) {
    auto png = encode_png(drawing->image);
    if (!png) return png.error();
    report.heapmap_png_bytes = png->size();
    png_base64 = base64_encode(*png);
    drawn = &*drawing;
  } else {
    // The rest of the report is still worth having (e.g. a heap too large to draw).
    report.heapmap_error = drawing.message();
  }
  report.html = html_page({.title = dump_name,
                           .analysis_json = analysis_json,
                           .report_json = report_json(groups, drawn),
                           .objects_json = objects_json,
                           .heapmap_base64 = png_base64});
  return report;
}

}  // namespace memprof::report
