// memprof attach -p PID: loads the agent into a running Ruby process (no restart, no gem in its
// Gemfile) and starts tracking allocations. Idempotent.
#include <simdjson.h>

#include "attach/json_field.h"

#include "attach/attach_flow.h"
#include "cli/command.h"
#include "cli/process_tree_command.h"
#include "core/util/print_stderr.h"

namespace memprof::cli {
namespace {

struct AttachOptions {
  pid_t pid = 0;
  bool children = false;
  bool json = false;
};

Result<std::string> attach_one(pid_t pid, bool json) {
  MEMPROF_TRY(outcome, attach::attach_ruby(pid));
  if (json)
    return fmt::format("{{\"pid\":{},\"injected\":{},\"started\":{},\"pause_ms\":{:.3f},\"status\":{}}}", pid,
                       outcome.injected, outcome.started, outcome.pause_ms, outcome.status_json);
  simdjson::dom::parser parser;
  simdjson::dom::element status;
  std::string_view ruby = "?", mechanism = "?";
  uint64_t slots = 0, call_sites = 0, ractors = 1;
  if (parser.parse(outcome.status_json).get(status) == simdjson::SUCCESS) {
    attach::read_field(status, "ruby", ruby);
    attach::read_field(status, "mechanism", mechanism);
    attach::read_field(status, "hooked_slots", slots);
    attach::read_field(status, "hooked_call_sites", call_sites);
    attach::read_field(status, "ractors", ractors);
  }
  std::string how = mechanism == "hooks"
                        ? fmt::format("hooks on {} GOT slot{} and {} call site{}", slots, slots == 1 ? "" : "s",
                                      call_sites, call_sites == 1 ? "" : "s")
                        : fmt::format("Ruby's NEWOBJ event ({})", mechanism);
  std::string said;
  if (outcome.injected)
    said = fmt::format("attached to process {} (Ruby {}) in {:.1f} ms of pause\n", pid, ruby, outcome.pause_ms);
  said += fmt::format("{} process {}: {}\n", outcome.started ? "tracking" : "already tracking", pid, how);
  // Said now rather than by every read-out later (Tracker::prune says why).
  if (ractors > 1)
    print_stderr(
               "memprof: note: process {} runs {} Ractors: allocations are tracked, but stats, top, "
               "leaks, report and dump answer only once the main Ractor is left alone\n",
               pid, ractors);
  return said;
}

int run_attach(const AttachOptions& options) {
  int status = for_each_target(options.pid, options.children, options.json,
                               [&](pid_t pid) { return attach_one(pid, options.json); });
  if (!options.json && status == 0)
    fmt::print("next: memprof top -p {0}   memprof stats -p {0}   memprof detach -p {0}\n",
               options.pid);
  return status;
}

MEMPROF_COMMAND("attach", "Attach to a running Ruby process and track its allocations",
                [](CLI::App& sub) -> std::function<int()> {
                  auto options = std::make_shared<AttachOptions>();
                  add_pid_option(sub, options->pid, "Process to attach to")->required();
                  sub.add_flag("--children", options->children,
                               "Also every descendant (a preforking server's workers; those that\n"
                               "cannot be attached, such as a shell wrapper, are left out with a note)");
                  sub.add_flag("--json", options->json, "Print the outcome as JSON");
                  sub.footer(
                      "Loads memprof's agent into the process with ptrace (one thread is held\n"
                      "for a few milliseconds, at a moment when it holds no malloc or loader\n"
                      "lock), then the memprof gem built for that Ruby, and starts tracking\n"
                      "allocations from now on. Attaching again does nothing. The process needs\n"
                      "no change and no restart; `memprof detach` removes every hook.");
                  return [options] { return run_attach(*options); };
                });

}  // namespace
}  // namespace memprof::cli
