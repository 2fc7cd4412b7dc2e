// Times each phase of the heap analyzer on one dump: load (read + parse + resolve), graph,
// dominators + retained sizes, analysis. Prints one line per phase and the peak RSS.
//
//   heap_phases DUMP
#include <sys/resource.h>

#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "core/util/malloc_policy.h"
#include "heap/analysis.h"
#include "heap/dominators.h"
#include "heap/graph.h"
#include "heap/loader.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// CPU time of all threads so far: on a busy machine wall time lies, CPU time much less.
double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace memprof::heap;
  memprof::reuse_freed_memory();  // as the memprof command does
  if (argc != 2) {
    std::fprintf(stderr, "usage: heap_phases DUMP\n");
    return 2;
  }
  auto start = std::chrono::steady_clock::now();
  double cpu_start = cpu_seconds();
  auto heap = load_heap(argv[1]);
  double load_cpu = cpu_seconds() - cpu_start;
  if (!heap) {
    std::fprintf(stderr, "heap_phases: %s\n", heap.message().c_str());
    return 1;
  }
  double load = seconds_since(start);
  heap->release_index();  // as memprof analyze does
  start = std::chrono::steady_clock::now();
  cpu_start = cpu_seconds();
  Graph graph = Graph::build(*heap);
  double graph_time = seconds_since(start);
  start = std::chrono::steady_clock::now();
  DominatorTree tree = DominatorTree::compute(graph, *heap);
  double dominators = seconds_since(start);
  double graph_cpu = cpu_seconds() - cpu_start;
  start = std::chrono::steady_clock::now();
  Analysis analysis = analyze_heap(*heap, tree, 20);
  double analyze = seconds_since(start);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  double mb = static_cast<double>(heap->input_bytes) / 1e6;
  fmt::print("objects {} references {} input {:.1f} MB\n", heap->size(), heap->ref_targets.size(), mb);
  fmt::print("load        {:.3f} s  ({:.0f} MB/s), CPU {:.3f} s\n", load, mb / load, load_cpu);
  fmt::print("graph       {:.4f} s\n", graph_time);
  fmt::print("dominators  {:.4f} s\n", dominators);
  fmt::print("analysis    {:.4f} s\n", analyze);
  fmt::print("graph+dominators+retained {:.3f} s, CPU {:.3f} s\n", graph_time + dominators, graph_cpu);
  fmt::print("peak RSS    {:.1f} MB ({:.0f} bytes/object; budget 200)\n", usage.ru_maxrss / 1024.0,
             usage.ru_maxrss * 1024.0 / static_cast<double>(heap->size()));
  return analysis.count == heap->size() ? 0 : 1;
}
