// Shared shape of the commands that draw a dump's heap map into a file (`memprof heapmap`,
// `memprof html`): DUMP and -o arguments, the map's --by and --ruby-version options, and the
// map options checked before the dump is loaded. What each command renders and prints is its own.
#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <span>
#include <string>

#include "cli/command.h"
#include "core/util/print_stderr.h"
#include "core/util/result.h"
#include "heap/loader.h"
#include "report/heap_map.h"
#include "report/output_file.h"

namespace memprof::cli {

struct HeapMapCommandArguments {
  std::string dump;
  std::string output;
  std::string by = "type";
  std::string ruby_version;
};

// Adds the arguments to `sub`, parsed into `args` (which must outlive the parse). `add_own_options`
// adds the command's other options; --help lists them between -o and --by.
inline void add_heap_map_command_arguments(CLI::App& sub, HeapMapCommandArguments& args,
                                           const std::string& output_description,
                                           const std::function<void()>& add_own_options = {}) {
  sub.add_option("dump", args.dump, "ObjectSpace.dump_all file (plain, gzip, zstd or xz; - for stdin)")->required();
  sub.add_option("-o,--output", args.output,
                 output_description + " (- for stdout; written through a temporary file and a "
                                      "rename; the dump itself, by any path or link, is refused)")
      ->required()
      ->check(not_empty());
  if (add_own_options) add_own_options();
  sub.add_option("--by", args.by, "Color the heap map's cells by 'type' (default) or 'generation'");
  sub.add_option("--ruby-version", args.ruby_version,
                 "Ruby version that wrote the dump (e.g. 3.1) when its page layout cannot be "
                 "derived from the addresses");
}

struct DumpForHeapMap {
  report::HeapMapOptions map_options;
  heap::Heap heap;
};

// The map options and the output path first, so that a typo or an output that would overwrite
// the dump fails before a large dump is read; then the dump, its bad lines reported on stderr.
inline Result<DumpForHeapMap> load_dump_for_heap_map(const HeapMapCommandArguments& args) {
  auto map_options = report::heap_map_options(args.by, args.ruby_version);
  if (!map_options) return map_options.error();
  MEMPROF_TRY_STATUS(report::check_output_is_not_an_input(args.output, std::span(&args.dump, 1)));
  auto heap = heap::load_heap(args.dump, {.warnings = stderr});
  if (!heap) return heap.error();
  // Every cell would be "no generation", which reads like a broken picture.
  if (map_options->coloring == report::MapColoring::kGeneration &&
      std::ranges::none_of(heap->generation, [](uint32_t g) { return g != heap::kNoGeneration; }))
    print_stderr(
               "memprof: warning: {}: no object has a generation (the dump was written without "
               "ObjectSpace.trace_object_allocations): every cell is colored as \"none\"\n",
               heap::dump_display_name(args.dump));
  return DumpForHeapMap{*map_options, std::move(*heap)};
}

}  // namespace memprof::cli
