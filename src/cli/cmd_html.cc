// memprof html DUMP -o report.html [--top N] [--by type|generation] [--ruby-version X.Y]
// One self-contained HTML page about a heap dump (see src/report/html_report.h).
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/command.h"
#include "heap/loader.h"
#include "report/html_report.h"
#include "report/output_file.h"

namespace memprof::cli {
namespace {

struct HtmlOptions {
  std::string dump;
  std::string output;
  size_t top = 100;
  std::string by = "type";
  std::string ruby_version;
};

int run_html(const HtmlOptions& options) {
  // Options first: a typo fails before a large dump is read.
  auto map_options = report::heap_map_options(options.by, options.ruby_version);
  if (!map_options) return fail(map_options.message());
  report::HtmlReportOptions report_options;
  report_options.top = options.top;
  report_options.heapmap = *map_options;

  auto heap = heap::load_heap(options.dump, {.warnings = stderr});
  if (!heap) return fail(heap.message());
  auto report = report::render_html_report(options.dump, *heap, report_options);
  if (!report) return fail(fmt::format("{}: {}", options.dump, report.message()));
  if (!report->heapmap_error.empty()) {
    fmt::print(stderr, "memprof: warning: heap map left out of the page: {}\n",
               report->heapmap_error);
  }
  const std::string& html = report->html;
  if (auto written = report::write_output_file(
          options.output, {reinterpret_cast<const unsigned char*>(html.data()), html.size()});
      !written) {
    return fail(written.message());
  }
  fmt::print("{}: {} bytes; {} objects, {} treemap groups, heap map {} bytes of PNG\n",
             options.output, html.size(), report->objects, report->treemap_groups,
             report->heapmap_png_bytes);
  return 0;
}

MEMPROF_COMMAND(
    "html", "Write a self-contained HTML report of a heap dump", [](CLI::App& sub) {
      auto options = std::make_shared<HtmlOptions>();
      sub.add_option("dump", options->dump, "ObjectSpace.dump_all file (plain, gzip or zstd)")
          ->required();
      sub.add_option("-o,--output", options->output, "HTML file to write")->required();
      sub.add_option("--top", options->top, "Rows in the class, site and retained lists (0: all; at least 28)")
          ->capture_default_str();
      sub.add_option("--by", options->by, "Heap map colors: 'type' (default) or 'generation'");
      sub.add_option("--ruby-version", options->ruby_version,
                     "Ruby version that wrote the dump, when the page layout cannot be derived");
      return [options] { return run_html(*options); };
    });

}  // namespace
}  // namespace memprof::cli
