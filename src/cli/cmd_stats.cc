// memprof stats -p PID: what Memprof.stats prints, read from an attached process.
#include <simdjson.h>

#include "attach/agent_client.h"
#include "attach/live_snapshot.h"
#include "attach/process_tree.h"
#include "attach/top_screen.h"
#include "core/util/json_escape.h"
#include "cli/command.h"

namespace memprof::cli {
namespace {

struct StatsOptions {
  pid_t pid = 0;
  size_t top = 0;
  bool children = false;
  bool json = false;
};

// A master and its workers: their groups added up, printed as Memprof.stats prints them.
int run_stats_of_tree(const StatsOptions& options) {
  auto snapshot = attach::read_snapshot(attach::process_tree(options.pid));
  if (!snapshot.ok()) return fail(snapshot.message());
  attach::TopFrame frame{options.pid, &*snapshot, nullptr};
  auto rows = attach::sorted_rows(frame, attach::TopSettings{});
  if (options.top != 0 && rows.size() > options.top) rows.resize(options.top);
  std::vector<std::string> lines;
  for (const attach::Row& row : rows) {
    // "file:line Class" -> Memprof.stats' "COUNT file:line:Class"
    std::string key = row.key;
    if (size_t space = key.rfind(' '); space != std::string::npos) key[space] = ':';
    lines.push_back(fmt::format("{:>7} {}", row.count, key));
  }
  if (options.json) {
    std::string out = "{\"lines\":[";
    for (size_t i = 0; i < lines.size(); ++i) {
      out += i == 0 ? "\"" : ",\"";
      append_json_escaped(out, lines[i]);
      out += '"';
    }
    fmt::print("{}]}}\n", out);
  } else {
    for (const std::string& line : lines) fmt::print("{}\n", line);
  }
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
  return 0;
}

MEMPROF_COMMAND("stats", "Live tracked objects of an attached process, by file:line and class",
                [](CLI::App& sub) -> std::function<int()> {
                  auto options = std::make_shared<StatsOptions>();
                  sub.add_option("-p,--pid", options->pid, "Attached process")->required();
                  sub.add_option("--top", options->top, "Only the N largest groups (0: all)");
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
