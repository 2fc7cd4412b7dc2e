// `memprof html`: one self-contained HTML page about a dump: every table of `memprof analyze`
// (by type, class, allocation site, gem and generation; the object lists; duplicate strings),
// sortable, each group leading to its largest objects and each object to a page with its
// references, retainers and path from a root; a treemap of retained size by class, and the heap
// map PNG inline. The numbers are those of `memprof analyze --json` (the same
// renderer produces the embedded data), so the two never disagree.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/util/result.h"
#include "heap/heap.h"
#include "report/heap_map.h"

namespace memprof::report {

struct HtmlReportOptions {
  size_t top = 100;  // rows in the class, site and dominator lists (0: all; at least the
                     // number of object types, so the per-type table is always complete)
  size_t treemap_groups = 60;  // boxes in the treemap (the rest merged into one)
  size_t samples = 5;          // objects per group row the page can drill down to
  size_t listed = 10;          // references and retainers listed on an object page
  HeapMapOptions heapmap;
};

struct HtmlReport {
  std::string html;
  uint64_t objects = 0;
  uint64_t treemap_groups = 0;
  uint64_t heapmap_png_bytes = 0;  // 0: no heap map in the page, see heapmap_error
  std::string heapmap_error;       // why the heap map was left out (draw_heap_map's error)
};

Result<HtmlReport> render_html_report(std::string_view dump_name, const heap::Heap& heap,
                                      const HtmlReportOptions& options);

}  // namespace memprof::report
