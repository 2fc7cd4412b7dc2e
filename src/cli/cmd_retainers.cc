// memprof retainers DUMP ADDRESS: the roots and objects that reference an object, its immediate
// dominator, and whether only machine_context keeps it alive.
#include "cli/dump_object_command.h"
#include "heap/dominators.h"

namespace memprof::cli {
namespace {

MEMPROF_COMMAND("retainers", "Objects and roots referencing an object in a heap dump",
                [](CLI::App& sub) {
                  return setup_dump_object_command(
                      sub, [](const heap::Heap& heap, const heap::Graph& graph, heap::ObjectId target,
                              const heap::QueryOptions& options) {
                        auto dominators = heap::DominatorTree::compute(graph, heap);
                        return heap::render_retainers(heap, graph, dominators, target, options);
                      });
                });

}  // namespace
}  // namespace memprof::cli
