// Shared shape of the commands that answer a question about one object of a heap dump
// (`memprof path`, `memprof retainers`, `memprof show`): DUMP and ADDRESS arguments, --json and
// --full, the dump loaded and the object found, then the command's own rendering.
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "cli/command.h"
#include "heap/dominators.h"
#include "heap/graph.h"
#include "heap/loader.h"
#include "heap/object_query.h"

namespace memprof::cli {

// Renders the answer for `target`; the heap's address index is already released and the graph
// built.
using DumpObjectRenderer = std::function<std::string(const heap::Heap&, const heap::Graph&, heap::ObjectId target,
                                                     const heap::QueryOptions&)>;

inline std::function<int()> setup_dump_object_command(CLI::App& sub, DumpObjectRenderer render) {
  struct Arguments {
    std::string dump;
    std::string address;
    heap::QueryOptions options;
  };
  auto args = std::make_shared<Arguments>();
  sub.add_option("dump", args->dump, "ObjectSpace.dump_all file (plain, gzip, zstd or xz; - for stdin)")->required();
  sub.add_option("address", args->address, "Object address, e.g. 0x7f35c85e0010")->required();
  sub.add_flag("--json", args->options.json, "One JSON object instead of text");
  sub.add_flag("--full", args->options.full,
               "Do not collapse: every hop of a long chain (runs of more than 6 objects of one "
               "class show their ends and a count) and every retainer or reference (the first 20 "
               "and a count by class)");
  return [args, render = std::move(render)] {
    auto heap = heap::load_heap(args->dump, {.warnings = stderr});
    if (!heap) return fail(heap.message());
    auto target = heap::find_object_argument(*heap, args->address, args->dump);
    if (!target) return fail(target.message());
    heap->release_index();  // no more lookups by address: its memory goes to the graph
    auto graph = heap::Graph::build(*heap);
    std::string out = render(*heap, graph, *target, args->options);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  };
}

// The same for answers that need the dominator tree (retained sizes, immediate dominators).
using DominatedObjectRenderer =
    std::string (*)(const heap::Heap&, const heap::Graph&, const heap::DominatorTree&, heap::ObjectId,
                    const heap::QueryOptions&);
inline std::function<int()> setup_dominated_object_command(CLI::App& sub, DominatedObjectRenderer render) {
  return setup_dump_object_command(sub, [render](const heap::Heap& heap, const heap::Graph& graph,
                                                 heap::ObjectId target, const heap::QueryOptions& options) {
    return render(heap, graph, heap::DominatorTree::compute(graph, heap), target, options);
  });
}

}  // namespace memprof::cli
