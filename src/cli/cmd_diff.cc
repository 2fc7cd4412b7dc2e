// memprof diff A B [C]: objects allocated after dump A and still alive in B (and C), by
// allocation site and class -- the three-dump technique for finding leaks.
#include <algorithm>
#include <cstdio>

#include "cli/command.h"
#include "cli/object_filter_options.h"
#include "heap/diff_report.h"
#include "heap/graph.h"
#include "heap/loader.h"
#include "heap/reachability.h"

namespace memprof::cli {
namespace {

struct DiffOptions {
  std::vector<std::string> dumps;
  bool json = false;
  size_t top = 20;
  heap::ObjectFilter filter;
  size_t samples = 0;
};

// The objects of `heap` its roots reach, or nothing when its ROOT lines are missing or some
// were unreadable: then every object must count as alive.
std::optional<std::vector<uint8_t>> reachable_objects(const heap::Heap& heap) {
  if (!heap.reachability_known()) return std::nullopt;
  return heap::reachable_from_roots(heap::Graph::build(heap), heap);
}

int run_diff(const DiffOptions& options) {
  if (options.dumps.size() < 2 || options.dumps.size() > 3) {
    return fail("diff takes two or three dumps: A B [C]");
  }
  // The second reading of stdin would find it empty ("/dev/stdin: empty file").
  if (std::count(options.dumps.begin(), options.dumps.end(), "-") > 1)
    return fail("stdin can be read only once: give at most one of the dumps as -");
  std::vector<heap::Heap> heaps;
  for (const std::string& path : options.dumps) {
    auto heap = heap::load_heap(path, {.warnings = stderr});
    if (!heap) return fail(heap.message());
    heaps.push_back(std::move(*heap));
  }
  for (size_t i = 1; i < heaps.size(); ++i) {
    auto order = heap::check_dump_order(heaps[i - 1], options.dumps[i - 1], heaps[i], options.dumps[i]);
    if (!order) return fail(order.message());
  }
  auto selection = heap::ObjectSelection::make(heaps[1], options.filter);
  if (!selection) return fail(selection.message());
  const heap::Heap* third = heaps.size() == 3 ? &heaps[2] : nullptr;
  auto reachable_a = reachable_objects(heaps[0]);
  auto reachable_b = reachable_objects(heaps[1]);
  auto reachable_c = third != nullptr ? reachable_objects(*third) : std::nullopt;
  heap::DiffResult diff = heap::diff_heaps(
      heaps[0], heaps[1], third,
      {.selection = &*selection,
       .samples = options.samples,
       .reachable_a = reachable_a ? &*reachable_a : nullptr,
       .reachable_b = reachable_b ? &*reachable_b : nullptr,
       .reachable_c = reachable_c ? &*reachable_c : nullptr});
  heap::DiffReportContext context{
      .names = {options.dumps[0], options.dumps[1],
                third != nullptr ? std::string_view(options.dumps[2]) : std::string_view()},
      .b = heaps[1],
      .top = options.top,
      .filter = options.filter.describe()};
  std::string out = options.json ? heap::render_diff_json(context, diff) : heap::render_diff_text(context, diff);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

MEMPROF_COMMAND("diff", "Objects allocated after dump A and still alive in B (and C), by site and class",
                [](CLI::App& sub) -> std::function<int()> {
                  auto options = std::make_shared<DiffOptions>();
                  sub.footer(
                      "Whether an object of B is new is decided by its allocation generation when "
                      "the dumps carry one (ObjectSpace.trace_object_allocations_start), else by "
                      "address, class and site. Objects that cannot be decided (no generation: "
                      "moved by GC.compact on Ruby 3.1, or older than tracing) are counted and "
                      "listed apart. Objects no root reaches (garbage the GC had not swept when "
                      "the dump was taken) are not alive: left out, and counted; so are the "
                      "objects Memprof.dump_all made to write B (marked memprof_own). Dumps in the "
                      "wrong order or from different processes are refused. Sample addresses are "
                      "objects of B.");
                  // "Two or more" to CLI11, which prints a range of 2 to 3 as "x 2" (read: exactly
                  // two); more than three is refused when the command runs.
                  sub.add_option("dumps", options->dumps, "A B [C]: two or three dumps, in the order they were taken")
                      ->required()
                      ->type_name("DUMP")
                      ->expected(-2);
                  sub.add_flag("--json", options->json, "One JSON object instead of text");
                  add_count_option(sub, "--top", options->top, "Rows to show (0: all)")
                      ->capture_default_str();
                  add_object_filter_options(sub, options->filter, options->samples);
                  return [options] { return run_diff(*options); };
                });

}  // namespace
}  // namespace memprof::cli
