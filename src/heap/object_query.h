// Questions about one object, for `memprof path`, `memprof retainers` and `memprof show`: how
// the roots reach it, who references it, what it is. Each renders text (one line per hop,
// retainer or reference) or, with QueryOptions::json, one JSON object.
//
// Long answers are collapsed unless QueryOptions::full: a run of more than 6 consecutive hops
// of the same class shows its first and last 2 and "... 299,990 more Node ..." between; lists
// of retainers and references show their first 20 and a count of the rest by class.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"
#include "heap/dominators.h"
#include "heap/graph.h"
#include "heap/heap.h"

namespace memprof::heap {

// One entry of a collapsed path: an object, or a run of `collapsed` objects of class `name`.
struct PathEntry {
  ObjectId id = kNoObject;
  uint64_t collapsed = 0;
  std::string name;
};
// `path` with its runs of more than 6 objects of one class collapsed (see above); as is with `full`.
std::vector<PathEntry> collapse_runs(const Heap& heap, const std::vector<ObjectId>& path, bool full);

// The objects of `graph` that reference `target`, each once, in id order (the super-root and
// `target` itself left out: an IO references itself).
std::vector<ObjectId> retainers_of(const Graph& graph, ObjectId target);

struct QueryOptions {
  bool json = false;
  bool full = false;  // no collapsing
};

// The object at an address given on the command line ("0x7f..." or bare hex). Errors:
// "ADDRESS: not an address", "ADDRESS: no object at this address in DUMP".
Result<ObjectId> find_object_argument(const Heap& heap, std::string_view address,
                                      std::string_view dump_name);

// "root <kind>" then one line per object from the root down to the target. A hop through the
// object's class (which the dump leaves out of "references") is marked "(via class)". Objects
// kept alive only through machine_context are marked. Unreachable target: one line saying so.
// JSON: {"target","reachable","root","path":[{object...,"via_class"} | {"collapsed","name"}]}.
std::string render_root_path(const Heap& heap, const Graph& graph, ObjectId target,
                             const QueryOptions& options);

// The target, whether it is kept alive only through machine_context, its immediate dominator,
// then every root kind and object that references it (each object once, dump order).
// JSON: {"object","reachable","machine_context_only","immediate_dominator","roots":[kinds],
// "retainers":[object...],"more_retainers":N,"more_by_class":[{"name","count"}]}.
std::string render_retainers(const Heap& heap, const Graph& graph, const DominatorTree& tree,
                             ObjectId target, const QueryOptions& options);

// Everything memprof knows about the object: its fields, retained size and dominator, what it
// references, what references it, and its path from a root.
std::string render_object(const Heap& heap, const Graph& graph, const DominatorTree& tree,
                          ObjectId target, const QueryOptions& options);

}  // namespace memprof::heap
