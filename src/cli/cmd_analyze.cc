// memprof analyze DUMP [--json] [--top N]: what a heap dump holds, by type, class, allocation
// site, gem and generation, with retained sizes from the dominator tree.
#include <cstdio>
#include <string_view>
#include <vector>

#include <fmt/ranges.h>

#include "cli/command.h"
#include "cli/object_filter_options.h"
#include "core/util/print_stderr.h"
#include "heap/analysis_report.h"
#include "heap/loader.h"

namespace memprof::cli {
namespace {

struct AnalyzeOptions {
  std::string dump;
  bool json = false;
  size_t top = 20;
  heap::ObjectFilter filter;
  size_t samples = 0;
};

int run_analyze(const AnalyzeOptions& options) {
  auto heap = heap::load_heap(options.dump, {.warnings = stderr});
  if (!heap) return fail(heap.message());
  heap->release_index();  // no more lookups by address: its memory goes to the graph
  auto selection = heap::ObjectSelection::make(*heap, options.filter);
  if (!selection) return fail(selection.message());
  auto analyzed = heap::analyze_loaded_heap(
      *heap, {.top = options.top == 0 ? heap->size() : options.top,
              .samples = options.samples,
              .selection = &*selection});
  heap::ReportContext context{options.dump, *heap, analyzed.dominators, options.top,
                              options.filter.describe()};
  std::string out = options.json ? heap::render_analysis_json(context, analyzed.analysis)
                                 : heap::render_analysis_text(context, analyzed.analysis);
  std::fwrite(out.data(), 1, out.size(), stdout);
  // A filter that selects nothing is most often a name written otherwise than reports write it.
  if (!options.filter.empty() && analyzed.analysis.count == 0) {
    std::vector<std::string_view> hints;
    if (!options.filter.class_label.empty())
      hints.push_back("classes are named as the by-class table names them ('Foo::Bar', 'Object (ENV)', "
                      "'(IMEMO:iseq)')");
    if (!options.filter.site.empty())
      hints.push_back("sites are written as the by-location table writes them (the file whole or its "
                      "tail after a '/', with or without its ':LINE')");
    print_stderr("memprof: no object of {} matches {}{}{}\n", options.dump, options.filter.describe(),
               hints.empty() ? "" : ": ", fmt::join(hints, "; "));
  }
  return 0;
}

MEMPROF_COMMAND("analyze",
                "Summarize a heap dump: count, memsize and retained size by type, class, location, gem "
                "and generation; biggest, top retained, machine_context-only and most referenced "
                "objects; duplicate strings",
                [](CLI::App& sub) -> std::function<int()> {
                  auto options = std::make_shared<AnalyzeOptions>();
                  sub.add_option("dump", options->dump, "ObjectSpace.dump_all file (plain, gzip, zstd or xz; - for stdin)")
                      ->required();
                  sub.add_flag("--json", options->json, "One JSON object instead of text");
                  add_count_option(sub, "--top", options->top, "Rows per list (0: all)")->capture_default_str();
                  add_object_filter_options(sub, options->filter, options->samples);
                  sub.footer(
                      "With --class/--site/--type the totals, groups and lists cover the selected "
                      "objects only; retained sizes stay those of the whole heap. Sample addresses "
                      "(--samples) are the objects of a row that retain the most: look at one "
                      "with `memprof show DUMP ADDRESS`.");
                  return [options] { return run_analyze(*options); };
                });

}  // namespace
}  // namespace memprof::cli
