// Questions about one object, for `memprof path` and `memprof retainers`: how the roots reach
// it and who references it. Both render text, one line per hop or retainer.
#pragma once

#include <string>
#include <string_view>

#include "core/util/result.h"
#include "heap/dominators.h"
#include "heap/graph.h"
#include "heap/heap.h"

namespace memprof::heap {

// The object at an address given on the command line ("0x7f..." or bare hex). Errors:
// "ADDRESS: not an address", "ADDRESS: no object at this address in DUMP".
Result<ObjectId> find_object_argument(const Heap& heap, std::string_view address,
                                      std::string_view dump_name);

// "root <kind>" then one line per object from the root down to the target. A hop through the
// object's class (which the dump leaves out of "references") is marked "(via class)". Objects
// kept alive only through machine_context are marked. Unreachable target: one line saying so.
std::string render_root_path(const Heap& heap, const Graph& graph, ObjectId target);

// The target, whether it is kept alive only through machine_context, its immediate dominator,
// then every root kind and object that references it (each object once, dump order).
std::string render_retainers(const Heap& heap, const Graph& graph, const DominatorTree& tree,
                             ObjectId target);

}  // namespace memprof::heap
