// memprof heapmap DUMP -o heap.png [--by type|generation] [--ruby-version X.Y]
// Draws every heap page of a dump_all file as a column of slots (see src/report/heap_map.h).
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/command.h"
#include "heap/loader.h"
#include "report/heap_map.h"
#include "report/output_file.h"
#include "report/png_encoder.h"

namespace memprof::cli {
namespace {

struct HeapmapOptions {
  std::string dump;
  std::string output;
  std::string by = "type";
  std::string ruby_version;
};

int run_heapmap(const HeapmapOptions& options) {
  // Options first: a typo fails before a large dump is read.
  auto map_options = report::heap_map_options(options.by, options.ruby_version);
  if (!map_options) return fail(map_options.message());

  auto heap = heap::load_heap(options.dump, {.warnings = stderr});
  if (!heap) return fail(heap.message());
  auto drawing = report::draw_heap_map(*heap, *map_options);
  if (!drawing) return fail(fmt::format("{}: {}", options.dump, drawing.message()));
  auto png = report::encode_png(drawing->image);
  if (!png) return fail(png.message());
  if (auto written = report::write_output_file(options.output, *png); !written) {
    return fail(written.message());
  }

  const report::LayoutChoice& layout = drawing->layout;
  if (drawing->undrawn != 0) {
    fmt::print(stderr, "memprof: warning: objects not drawn (no free slot in the {} layout): {}\n",
               layout.layout->name, drawing->undrawn);
  }
  fmt::print("{}: {} pages, {} slots, {} objects, {} pinned; {} layout ({})\n", options.output,
             drawing->pages, drawing->slots, drawing->objects, drawing->pinned,
             layout.layout->name, layout.reason);
  return 0;
}

MEMPROF_COMMAND(
    "heapmap", "Draw a heap dump's pages and slots as a PNG picture", [](CLI::App& sub) {
      auto options = std::make_shared<HeapmapOptions>();
      sub.add_option("dump", options->dump, "ObjectSpace.dump_all file (plain, gzip or zstd)")
          ->required();
      sub.add_option("-o,--output", options->output, "PNG file to write")->required();
      sub.add_option("--by", options->by, "Color cells by 'type' (default) or 'generation'");
      sub.add_option("--ruby-version", options->ruby_version,
                     "Ruby version that wrote the dump (e.g. 3.1) when its page layout cannot be "
                     "derived from the addresses");
      return [options] { return run_heapmap(*options); };
    });

}  // namespace
}  // namespace memprof::cli
