// memprof dump -p PID -o FILE: a heap dump of a running process, written by a forked child.
#include <filesystem>

#include <simdjson.h>

#include "attach/agent_client.h"
#include "cli/command.h"
#include "heap/units.h"

namespace memprof::cli {
namespace {

struct DumpOptions {
  pid_t pid = 0;
  std::string output;
  bool json = false;
};

int run_dump(const DumpOptions& options) {
  std::error_code error;
  // The target resolves the path in its own working directory.
  std::string path = std::filesystem::absolute(options.output, error).string();
  if (error) return fail(fmt::format("{}: {}", options.output, error.message()));
  auto reply = attach::agent_request(options.pid, "fork-ruby", "dump " + path,
                                     std::chrono::minutes(30));
  if (!reply.ok()) return fail(reply.message());
  if (options.json) {
    fmt::print("{}\n", *reply);
    return 0;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  uint64_t fork_us = 0, bytes = 0;
  if (parser.parse(*reply).get(root) != simdjson::SUCCESS || root["fork_us"].get(fork_us) ||
      root["reply"]["bytes"].get(bytes))
    return fail("malformed reply from the agent");
  fmt::print("wrote {} ({}) from a child of process {}, which paused {:.1f} ms for the fork\n",
             path, heap::bytes_text(bytes), options.pid, static_cast<double>(fork_us) / 1000.0);
  fmt::print("next: memprof analyze {}\n", path);
  return 0;
}

MEMPROF_COMMAND("dump", "Heap dump of an attached process (ObjectSpace.dump_all with sites)",
                [](CLI::App& sub) -> std::function<int()> {
                  auto options = std::make_shared<DumpOptions>();
                  sub.add_option("-p,--pid", options->pid, "Attached process")->required();
                  sub.add_option("-o,--output", options->output, "Dump file to write")
                      ->required();
                  sub.add_flag("--json", options->json, "Print the outcome as JSON");
                  sub.footer(
                      "The process forks; the child writes ObjectSpace.dump_all's JSON lines,\n"
                      "with the file and line of every object memprof tracked, and exits. The\n"
                      "server pauses only for the fork (printed). The file is written by the\n"
                      "process's user, complete or not at all. Read it with memprof analyze.");
                  return [options] { return run_dump(*options); };
                });

}  // namespace
}  // namespace memprof::cli
