// memprof show DUMP ADDRESS: one object with its fields, retained size and dominator, what it
// references, what references it, and its path from a root -- where a sample address of
// `analyze --samples` or `diff --samples` leads.
#include "cli/dump_object_command.h"
#include "heap/dominators.h"

namespace memprof::cli {
namespace {

MEMPROF_COMMAND("show", "One object of a heap dump: fields, references, retainers, retained size, path",
                [](CLI::App& sub) {
                  return setup_dump_object_command(
                      sub, [](const heap::Heap& heap, const heap::Graph& graph, heap::ObjectId target,
                              const heap::QueryOptions& options) {
                        auto dominators = heap::DominatorTree::compute(graph, heap);
                        return heap::render_object(heap, graph, dominators, target, options);
                      });
                });

}  // namespace
}  // namespace memprof::cli
