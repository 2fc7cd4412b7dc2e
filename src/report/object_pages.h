// The HTML report's object pages: for each object the page links to (group samples, the top
// lists, duplicate strings), its fields, references, retainers and path from a root, as JSON
// the page's script renders. Objects those lists mention in turn get a summary (no lists of
// their own), so every row of an object page has a name and a size.
#pragma once

#include <string>
#include <vector>

#include "heap/dominators.h"
#include "heap/graph.h"
#include "heap/heap.h"

namespace memprof::report {

// {"0x...": {"type","name","class","memsize","retained","location","generation",
//            "references":[address],"more_references":N,"retainers":[address],
//            "more_retainers":N,"root":kind|null,"path":[address | {"collapsed":N,"name":...}]},
//  "0x...": {"type",...,"summary":true}, ...}; lists cut after `listed` entries.
std::string object_pages_json(const heap::Heap& heap, const heap::Graph& graph,
                              const heap::DominatorTree& tree, const std::vector<heap::ObjectId>& pages,
                              size_t listed);

}  // namespace memprof::report
