// memprof detach -p PID: stops tracking, removes every hook and ends the agent's thread.
#include <simdjson.h>

#include <string>
#include <string_view>
#include <vector>

#include <fmt/ranges.h>

#include "attach/agent_client.h"
#include "attach/json_field.h"
#include "attach/process_tree.h"
#include "cli/command.h"
#include "cli/process_tree_command.h"
#include "core/util/print_stderr.h"

namespace memprof::cli {
namespace {

struct DetachOptions {
  pid_t pid = 0;
  bool children = false;
  bool json = false;
};

// What the agent's reply to detach says: whether it stopped the tracking memprof had started
// ("stopped"), and what it left on ("kept": the process's own Memprof.start).
struct DetachReply {
  bool stopped = true;  // an older agent's reply may say nothing
  std::string_view kept;
};

DetachReply read_detach_reply(const std::string& reply, simdjson::dom::parser& parser) {
  DetachReply read;
  simdjson::dom::element root;
  if (parser.parse(reply).get(root) != simdjson::SUCCESS) return read;
  attach::read_field(root, "stopped", read.stopped);
  attach::read_field(root, "kept", read.kept);
  return read;
}

Result<std::string> detach_one(pid_t pid, bool json) {
  MEMPROF_TRY(reply, attach::agent_request(pid, "detach"));
  if (json) return fmt::format("{{\"pid\":{},\"detached\":true,\"reply\":{}}}", pid, reply);
  simdjson::dom::parser parser;
  const DetachReply said = read_detach_reply(reply, parser);
  if (!said.kept.empty())
    return fmt::format("detached from process {}: agent stopped; the process's own tracking (Memprof.start) "
                       "left on\n",
                       pid);
  // The agent alone (trace, native, run --no-track), or the gem loaded for a dump: no tracking
  // to stop. A trace or native session it ran is ended all the same.
  if (!said.stopped)
    return fmt::format("detached from process {}: agent stopped (nothing was tracked; every byte it patched "
                       "is restored)\n", pid);
  return fmt::format("detached from process {}: hooks removed, patched bytes restored, agent stopped\n", pid);
}

// Workers forked while their master was attached run agents of their own, which detaching the
// master leaves on: said, so that a preforking server is not believed untouched.
void note_attached_descendants(pid_t pid) {
  std::vector<pid_t> attached;
  for (pid_t descendant : attach::process_tree(pid))
    if (descendant != pid && attach::agent_listening(descendant)) attached.push_back(descendant);
  if (attached.empty()) return;
  print_stderr("memprof: {} of process {} still {} a memprof agent ({}): detach them with -p {} "
             "--children, or each with -p\n",
             attached.size() == 1 ? "1 descendant" : fmt::format("{} descendants", attached.size()), pid,
             attached.size() == 1 ? "has" : "have", fmt::join(attached, ", "), pid);
}

int run_detach(const DetachOptions& options) {
  const int status = for_each_target(options.pid, options.children, options.json,
                                     [&](pid_t pid) { return detach_one(pid, options.json); });
  if (!options.children) note_attached_descendants(options.pid);
  return status;
}

MEMPROF_COMMAND("detach", "Stop tracking an attached process and remove the agent's hooks",
                [](CLI::App& sub) -> std::function<int()> {
                  auto options = std::make_shared<DetachOptions>();
                  add_pid_option(sub, options->pid, "Attached process")->required();
                  sub.add_flag("--children", options->children,
                               "Also every descendant (as attach --children attached them)");
                  sub.add_flag("--json", options->json, "Print the outcome as JSON");
                  sub.footer(
                      "Stops tracking (Memprof.stop: every GOT slot and call site is restored,\n"
                      "the tables are freed), closes the agent's socket and ends its threads.\n"
                      "The agent's code stays mapped (a library cannot be unloaded safely while\n"
                      "Ruby may still hold a pointer into it); `memprof attach` restarts it.\n"
                      "A process that started tracking itself (Memprof.start in its code) keeps it.");
                  return [options] { return run_detach(*options); };
                });

}  // namespace
}  // namespace memprof::cli
