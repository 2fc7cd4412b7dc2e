// memprof heapmap DUMP -o heap.png [--by type|generation] [--ruby-version X.Y]
// Draws every heap page of a dump_all file as a column of slots, one section per size pool
// (see src/report/heap_map.h).
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/command.h"
#include "cli/heap_map_command.h"
#include "core/util/print_stderr.h"
#include "heap/units.h"
#include "report/heap_map.h"
#include "report/output_file.h"
#include "report/png_encoder.h"

namespace memprof::cli {
namespace {

int run_heapmap(const HeapMapCommandArguments& args) {
  auto dump = load_dump_for_heap_map(args);
  if (!dump) return fail(dump.message());
  auto drawing = report::draw_heap_map(dump->heap, dump->map_options);
  if (!drawing) return fail(fmt::format("{}: {}", args.dump, drawing.message()));
  auto png = report::encode_png(drawing->image);
  if (!png) return fail(png.message());
  if (auto written = report::write_output_file(args.output, *png); !written) {
    return fail(written.message());
  }

  std::FILE* summary = report::is_standard_output(args.output) ? stderr : stdout;  // not into the PNG
  const report::LayoutChoice& layout = drawing->layout;
  if (drawing->undrawn != 0) {
    print_stderr("memprof: warning: objects not drawn (no free slot in the {} layout): {}\n",
               layout.layout->name, heap::count_text(drawing->undrawn));
  }
  auto counted = [](uint64_t count, std::string_view noun) {
    return fmt::format("{} {}{}", heap::count_text(count), noun, count == 1 ? "" : "s");
  };
  fmt::print(summary, "{}: {}, {}, {}, {} pinned; {} layout ({})\n", args.output, counted(drawing->pages, "page"),
             counted(drawing->slots, "slot"), counted(drawing->objects, "object"), heap::count_text(drawing->pinned),
             layout.layout->name, layout.reason);
  for (const report::SizePoolSummary& pool : drawing->pools) {
    fmt::print(summary, "  {}-byte slots: {}, {}, {}\n", pool.slot_size, counted(pool.pages, "page"), counted(pool.slots, "slot"),
               counted(pool.objects, "object"));
  }
  return 0;
}

MEMPROF_COMMAND(
    "heapmap", "Draw a heap dump's pages and slots as a PNG picture", [](CLI::App& sub) {
      auto args = std::make_shared<HeapMapCommandArguments>();
      add_heap_map_command_arguments(sub, *args, "PNG file to write");
      return [args] { return run_heapmap(*args); };
    });

}  // namespace
}  // namespace memprof::cli
