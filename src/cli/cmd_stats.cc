// memprof stats -p PID: what Memprof.stats prints, read from an attached process.
#include <simdjson.h>

#include "attach/agent_client.h"
#include "attach/live_snapshot.h"
#include "attach/process_tree.h"
#include "core/track/aggregate.h"
#include "heap/json_writer.h"
#include "cli/command.h"
#include "cli/process_tree_command.h"

namespace memprof::cli {
namespace {

struct StatsOptions {
  pid_t pid = 0;
  size_t top = 0;
  bool children = false;
  bool json = false;
};

// An empty table printed nothing at all: a new user could not tell it from a broken command.
// On stderr, so that stdout stays the lines.
void say_nothing_is_tracked(pid_t pid, bool children) {
  fmt::print(stderr,
             "memprof: no live tracked objects in process {}{}: memprof tracks what is allocated "
             "after `memprof attach` (what was made before is in `memprof dump -p {}`)\n",
             pid, children ? " and its descendants" : "", pid);
}

// A master and its workers: their groups added up, printed as Memprof.stats prints them.
int run_stats_of_tree(const StatsOptions& options) {
  auto snapshot = attach::read_snapshot(attach::process_tree(options.pid));
  if (!snapshot.ok()) return fail(snapshot.message());
  LeftOutNotes().say(snapshot->left_out);
  std::vector<attach::LiveGroup>& groups = snapshot->groups;
  if (options.top != 0 && groups.size() > options.top) groups.resize(options.top);
  heap::JsonWriter json;
  json.begin_object();
  json.key("lines");
  json.begin_array();
  for (const attach::LiveGroup& group : groups) {
    std::string line = track::stats_line(group);
    if (options.json)
      json.value(line);
    else
      fmt::print("{}\n", line);
  }
  json.end_array();
  json.end_object();
  if (options.json) fmt::print("{}\n", json.str());
  if (!options.json && groups.empty()) say_nothing_is_tracked(options.pid, true);
  return 0;
}

int run_stats(const StatsOptions& options) {
  if (options.children) return run_stats_of_tree(options);
  auto reply = attach::ruby_request(options.pid, fmt::format("stats {}", options.top));
  if (!reply.ok()) return fail(reply.message());
  if (options.json) {
    fmt::print("{}\n", *reply);
    return 0;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  simdjson::dom::array lines;
  if (parser.parse(*reply).get(root) != simdjson::SUCCESS || root["lines"].get(lines))
    return fail("malformed reply from the agent");
  for (simdjson::dom::element line : lines) {
    std::string_view text;
    if (line.get(text) == simdjson::SUCCESS) fmt::print("{}\n", text);
  }
  // What the agent wants said about these lines (objects the tracker had to forget).
  if (std::string_view note; root["note"].get(note) == simdjson::SUCCESS)
    fmt::print(stderr, "memprof: process {}: {}\n", options.pid, note);
  if (lines.size() == 0) say_nothing_is_tracked(options.pid, false);
  return 0;
}

MEMPROF_COMMAND("stats", "Live tracked objects of an attached process, by file:line and class",
                [](CLI::App& sub) -> std::function<int()> {
                  auto options = std::make_shared<StatsOptions>();
                  add_pid_option(sub, options->pid, "Attached process")->required();
                  add_count_option(sub, "--top", options->top, "Only the N largest groups (0: all)");
                  sub.add_flag("--children", options->children,
                               "Add up the process and all its descendants (workers)");
                  sub.add_flag("--json", options->json, "Print {\"lines\": [...]}");
                  sub.footer(
                      "One line per group of live objects allocated since `memprof attach`, as\n"
                      "Memprof.stats prints them: COUNT FILE:LINE:CLASS, largest first. Live\n"
                      "means not yet freed by the GC.");
                  return [options] { return run_stats(*options); };
                });

}  // namespace
}  // namespace memprof::cli
