// memprof html DUMP -o report.html [--top N] [--by type|generation] [--ruby-version X.Y]
// One self-contained HTML page about a heap dump (see src/report/html_report.h).
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/command.h"
#include "cli/heap_map_command.h"
#include "core/util/print_stderr.h"
#include "heap/units.h"
#include "report/html_report.h"
#include "report/output_file.h"

namespace memprof::cli {
namespace {

struct HtmlArguments {
  HeapMapCommandArguments common;
  size_t top = 100;
};

int run_html(const HtmlArguments& args) {
  auto dump = load_dump_for_heap_map(args.common);
  if (!dump) return fail(dump.message());
  report::HtmlReportOptions report_options;
  report_options.top = args.top;
  report_options.heapmap = dump->map_options;

  auto report = report::render_html_report(args.common.dump, dump->heap, report_options);
  if (!report) return fail(fmt::format("{}: {}", args.common.dump, report.message()));
  if (!report->heapmap_error.empty()) {
    print_stderr("memprof: warning: heap map left out of the page: {}\n",
               report->heapmap_error);
  }
  const std::string& html = report->html;
  if (auto written = report::write_output_file(
          args.common.output, {reinterpret_cast<const unsigned char*>(html.data()), html.size()});
      !written) {
    return fail(written.message());
  }
  std::FILE* summary = report::is_standard_output(args.common.output) ? stderr : stdout;  // not into the page
  fmt::print(summary, "{}: {} bytes; {} objects, {} treemap groups, heap map {} bytes of PNG\n",
             args.common.output, heap::count_text(html.size()), heap::count_text(report->objects),
             heap::count_text(report->treemap_groups), heap::count_text(report->heapmap_png_bytes));
  return 0;
}

MEMPROF_COMMAND(
    "html",
    "Write a self-contained HTML report of a heap dump: every table of analyze, sortable, with a "
    "page per group (its largest objects) and per object (references, retainers, path from a root)",
    [](CLI::App& sub) {
      auto args = std::make_shared<HtmlArguments>();
      add_heap_map_command_arguments(sub, args->common, "HTML file to write", [&sub, args] {
        add_count_option(sub, "--top", args->top,
                       "Rows in the class, site and retained lists (0: all; at least 28)")
            ->capture_default_str();
      });
      return [args] { return run_html(*args); };
    });

}  // namespace
}  // namespace memprof::cli
