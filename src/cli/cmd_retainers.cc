// memprof retainers DUMP ADDRESS: the roots and objects that reference an object, its immediate
// dominator, and whether only machine_context keeps it alive.
#include <cstdio>

#include "cli/command.h"
#include "heap/loader.h"
#include "heap/object_query.h"

namespace memprof::cli {
namespace {

struct RetainersOptions {
  std::string dump;
  std::string address;
};

int run_retainers(const RetainersOptions& options) {
  auto heap = heap::load_heap(options.dump, {.warnings = stderr});
  if (!heap) return fail(heap.message());
  auto target = heap::find_object_argument(*heap, options.address, options.dump);
  if (!target) return fail(target.message());
  heap->release_index();  // no more lookups by address: its memory goes to the graph
  auto graph = heap::Graph::build(*heap);
  auto dominators = heap::DominatorTree::compute(graph, *heap);
  std::string out = heap::render_retainers(*heap, graph, dominators, *target);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

MEMPROF_COMMAND("retainers", "Objects and roots referencing an object in a heap dump",
                [](CLI::App& sub) -> std::function<int()> {
                  auto options = std::make_shared<RetainersOptions>();
                  sub.add_option("dump", options->dump, "ObjectSpace.dump_all file")->required();
                  sub.add_option("address", options->address, "Object address, e.g. 0x7f35c85e0010")
                      ->required();
                  return [options] { return run_retainers(*options); };
                });

}  // namespace
}  // namespace memprof::cli
