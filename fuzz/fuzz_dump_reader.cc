// Fuzzes the heap dump reader (decompression detection, line splitting, JSON records) and
// everything that consumes its output: graph, dominators, analysis, paths, diff. Any input must
// give either an error value or a consistent Heap -- never a crash, hang or sanitizer report.
#include <cstddef>
#include <cstdint>

#include "heap/analysis.h"
#include "heap/diff.h"
#include "heap/dominators.h"
#include "heap/graph.h"
#include "heap/loader.h"
#include "heap/reachability.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memprof::heap;
  auto heap = load_heap_from_bytes({data, size}, "fuzz");
  if (!heap.ok()) return 0;
  // Every object's address finds the first object with that address (the index's buckets or,
  // for addresses out of Ruby's order, its table).
  for (ObjectId id = 0; id < heap->size(); ++id) {
    const uint64_t address = heap->address[id];
    const ObjectId found = heap->find(address);
    if (address != 0 && (found == kNoObject || found > id || heap->address[found] != address)) __builtin_trap();
  }
  Graph graph = Graph::build(*heap);
  DominatorTree tree = DominatorTree::compute(graph, *heap);
  Analysis analysis = analyze_heap(*heap, tree, 5);
  if (analysis.count != heap->size()) __builtin_trap();
  if (heap->size() > 0) {
    RootPath path = shortest_root_path(graph, *heap, static_cast<ObjectId>(heap->size() - 1));
    if (!path.objects.empty() && path.objects.back() != heap->size() - 1) __builtin_trap();
  }
  DiffResult diff = diff_heaps(*heap, *heap, &*heap);
  if (diff.kept_count > diff.new_count) __builtin_trap();
  return 0;
}
