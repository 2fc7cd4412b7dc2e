// memprof leaks -p PID: sites whose live objects grew in every round, in a running process.
#include <thread>

#include <fmt/format.h>

#include "attach/duration.h"
#include "attach/leak_rounds.h"
#include "attach/live_snapshot.h"
#include "attach/process_tree.h"
#include "cli/command.h"
#include "core/proc/process_access.h"
#include "cli/process_tree_command.h"
#include "core/util/print_stderr.h"
#include "heap/json_writer.h"
#include "heap/units.h"

namespace memprof::cli {
namespace {

constexpr size_t kDefaultRounds = 6;

struct LeaksOptions {
  pid_t pid = 0;
  bool children = false;
  std::string interval = "10s";
  size_t rounds = kDefaultRounds;
  size_t top = 20;
  bool json = false;
};

// "all 3 rounds", "the 1 round".
std::string all_rounds(size_t rounds) {
  return rounds == 1 ? std::string("the 1 round") : fmt::format("all {} rounds", rounds);
}

void print_text(const std::vector<attach::LeakSuspect>& suspects, const LeaksOptions& options,
                std::chrono::milliseconds interval) {
  const std::string rounds = fmt::format("{} of {}", all_rounds(options.rounds), attach::duration_text(interval));
  if (suspects.empty()) {
    fmt::print("no site grew in {}\n", rounds);
    return;
  }
  fmt::print("{} site{} grew in {} (live objects allocated since attach):\n", suspects.size(),
             suspects.size() == 1 ? "" : "s", rounds);
  fmt::print("{:>10} {:>11} {:>11}  {}\n", "GROWTH", "LIVE", "BYTES", "FILE:LINE CLASS");
  size_t shown = 0;
  for (const attach::LeakSuspect& suspect : suspects) {
    if (options.top != 0 && shown++ == options.top) break;
    fmt::print("{:>10} {:>11} {:>11}  {}\n", "+" + heap::count_text(suspect.total_growth()),
               heap::count_text(suspect.live), heap::bytes_text(suspect.bytes), suspect.key);
  }
  if (options.rounds < kDefaultRounds) {
    fmt::print("note: a site whose count only fluctuates grows in {} 1 time in {};\n"
               "      more rounds make that rarer ({}: 1 in {}), a longer interval does not\n",
               all_rounds(options.rounds), heap::count_text(attach::fluctuation_odds(options.rounds)), kDefaultRounds,
               heap::count_text(attach::fluctuation_odds(kDefaultRounds)));
  }
}

void print_json(const std::vector<attach::LeakSuspect>& suspects, const LeaksOptions& options) {
  heap::JsonWriter json;
  json.begin_object();
  // "1 in N": how often a site whose count only fluctuates grows in every round by chance.
  json.field("fluctuation_odds", attach::fluctuation_odds(options.rounds));
  json.key("suspects");
  json.begin_array();
  for (const attach::LeakSuspect& suspect : suspects) {
    json.begin_object();
    json.field("key", suspect.key);
    json.field("live", suspect.live);
    json.field("bytes", suspect.bytes);
    json.key("growth");
    json.begin_array();
    for (int64_t growth : suspect.growth_per_round) json.raw(std::to_string(growth));
    json.end_array();
    json.end_object();
  }
  json.end_array();
  json.end_object();
  fmt::print("{}\n", json.str());
}

int run_leaks(const LeaksOptions& options) {
  auto interval = attach::parse_duration(options.interval);
  if (!interval.ok()) return fail(interval.message());
  if (options.rounds < 1) return fail("--rounds must be at least 1");
  std::vector<pid_t> pids = attach::targets(options.pid, options.children);
  std::vector<attach::LiveSnapshot> snapshots;
  LeftOutNotes notes;
  for (size_t round = 0; round <= options.rounds; ++round) {
    if (round != 0) std::this_thread::sleep_for(*interval);
    auto snapshot = attach::read_snapshot(pids, attach::Collect::kGarbageFirst);
    if (!snapshot.ok() && round != 0 && !options.children && proc::process_gone(options.pid))
      return fail(fmt::format("process {} ended during round {} of {}: no growth to compare", options.pid,
                              round, options.rounds));
    if (!snapshot.ok()) return fail(snapshot.message());
    notes.say(snapshot->left_out);
    snapshots.push_back(std::move(*snapshot));
    if (!options.json && round != 0)
      print_stderr("round {}/{} done\n", round, options.rounds);
  }
  auto suspects = attach::find_leak_suspects(snapshots);
  options.json ? print_json(suspects, options) : print_text(suspects, options, *interval);
  return 0;
}

MEMPROF_COMMAND("leaks", "Sites whose live objects grew in every round (live, no dumps)",
                [](CLI::App& sub) -> std::function<int()> {
                  auto options = std::make_shared<LeaksOptions>();
                  add_pid_option(sub, options->pid, "Attached process")->required();
                  sub.add_option("--interval", options->interval,
                                 "Time between readings (default 10s)");
                  add_count_option(sub, "--rounds", options->rounds, fmt::format("Rounds (default {})", kDefaultRounds),
                                   /*least=*/1);
                  add_count_option(sub, "--top", options->top, "Suspects shown (0: all; default 20)");
                  sub.add_flag("--children", options->children,
                               "Add up the process and all its descendants (workers)");
                  sub.add_flag("--json", options->json, "Print the suspects as JSON");
                  sub.footer(fmt::format(
                      "Reads the live tracked objects rounds+1 times, --interval apart, and\n"
                      "lists the groups (file:line and class) whose count grew in every round:\n"
                      "the three-dump leak technique without dumps. Temporary objects and\n"
                      "caches that fill up do not grow every time; what leaks does. A count\n"
                      "that only fluctuates grows in all N rounds by chance 1 time in (N+1)!\n"
                      "(3 rounds: 1 in {}, {}: 1 in {}): more rounds, not a longer interval,\n"
                      "tell a leak from noise.\n"
                      "Each reading runs a full GC in the target first (as a heap dump\n"
                      "would), so that garbage not yet collected is not counted as live.",
                      heap::count_text(attach::fluctuation_odds(3)), kDefaultRounds,
                      heap::count_text(attach::fluctuation_odds(kDefaultRounds))));
                  return [options] { return run_leaks(*options); };
                });

}  // namespace
}  // namespace memprof::cli
