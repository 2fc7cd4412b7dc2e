// memprof stats -p PID: what Memprof.stats prints, read from an attached process.
#include <simdjson.h>

#include <algorithm>

#include "attach/agent_client.h"
#include "attach/live_snapshot.h"
#include "attach/process_tree.h"
#include "core/track/aggregate.h"
#include "core/util/print_stderr.h"
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
  print_stderr(
             "memprof: no live tracked objects in process {}{}: memprof tracks what is allocated "
             "after `memprof attach` (what was made before is in `memprof dump -p {}`)\n",
             pid, children ? " and its descendants" : "", pid);
}

void print_strings(heap::JsonWriter& json, std::string_view name, const std::vector<std::string>& texts) {
  json.key(name);
  json.begin_array();
  for (const std::string& text : texts) json.value(text);
  json.end_array();
}

// {"pid", "groups": [{"count", "bytes", "file", "line", "class"}], "notes", "left_out"}: the
// groups as fields, not Memprof.stats' lines to be parsed again.
void print_json(pid_t pid, const attach::LiveSnapshot& snapshot) {
  heap::JsonWriter json;
  json.begin_object();
  json.field("pid", static_cast<uint64_t>(pid));
  json.key("groups");
  json.begin_array();
  for (const attach::LiveGroup& group : snapshot.groups) {
    json.begin_object();
    json.field("count", group.count);
    json.field("bytes", group.bytes);
    json.field("file", group.file);
    json.field("line", static_cast<uint64_t>(std::max(group.line, 0)));
    json.field("class", group.class_name);
    json.end_object();
  }
  json.end_array();
  print_strings(json, "notes", snapshot.notes);
  print_strings(json, "left_out", snapshot.left_out);
  json.end_object();
  fmt::print("{}\n", json.str());
}

// From the groups themselves (bytes included): --json, and a master with its workers added up.
int run_stats_of_groups(const StatsOptions& options) {
  std::vector<pid_t> pids = options.children ? attach::process_tree(options.pid) : std::vector<pid_t>{options.pid};
  auto snapshot = attach::read_snapshot(pids, attach::Collect::kNo, attach::Notes::kTake);
  if (!snapshot.ok()) return fail(snapshot.message());
  std::vector<attach::LiveGroup>& groups = snapshot->groups;
  if (options.top != 0 && groups.size() > options.top) groups.resize(options.top);
  if (options.json) {
    print_json(options.pid, *snapshot);
    return 0;
  }
  LeftOutNotes().say(snapshot->left_out);
  for (const attach::LiveGroup& group : groups) fmt::print("{}\n", track::stats_line(group));
  for (const std::string& note : snapshot->notes) print_stderr("memprof: {}\n", note);
  if (groups.empty()) say_nothing_is_tracked(options.pid, options.children);
  return 0;
}

int run_stats(const StatsOptions& options) {
  if (options.children || options.json) return run_stats_of_groups(options);
  auto reply = attach::ruby_request(options.pid, fmt::format("stats {}", options.top));
  if (!reply.ok()) return fail(reply.message());
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
    print_stderr("memprof: process {}: {}\n", options.pid, note);
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
                  sub.add_flag("--json", options->json,
                               "Print {\"pid\", \"groups\": [{\"count\", \"bytes\", \"file\", \"line\", \"class\"}], "
                               "\"notes\", \"left_out\"}");
                  sub.footer(
                      "One line per group of live objects allocated since `memprof attach`, as\n"
                      "Memprof.stats prints them: COUNT FILE:LINE:CLASS, largest first. Live\n"
                      "means not yet freed by the GC.");
                  return [options] { return run_stats(*options); };
                });

}  // namespace
}  // namespace memprof::cli
