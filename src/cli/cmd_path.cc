// memprof path DUMP ADDRESS: the shortest chain of references from a root to an object.
#include <cstdio>

#include "cli/command.h"
#include "heap/loader.h"
#include "heap/object_query.h"

namespace memprof::cli {
namespace {

struct PathOptions {
  std::string dump;
  std::string address;
};

int run_path(const PathOptions& options) {
  auto heap = heap::load_heap(options.dump, {.warnings = stderr});
  if (!heap) return fail(heap.message());
  auto target = heap::find_object_argument(*heap, options.address, options.dump);
  if (!target) return fail(target.message());
  heap->release_index();  // no more lookups by address: its memory goes to the graph
  auto graph = heap::Graph::build(*heap);
  std::string out = heap::render_root_path(*heap, graph, *target);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

MEMPROF_COMMAND("path", "Shortest path from a root (vm, machine_context, ...) to an object in a heap dump",
                [](CLI::App& sub) -> std::function<int()> {
                  auto options = std::make_shared<PathOptions>();
                  sub.add_option("dump", options->dump, "ObjectSpace.dump_all file")->required();
                  sub.add_option("address", options->address, "Object address, e.g. 0x7f35c85e0010")
                      ->required();
                  return [options] { return run_path(*options); };
                });

}  // namespace
}  // namespace memprof::cli
