// memprof ps: the processes that have a memprof agent, and what it does there.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <simdjson.h>

#include "agent/protocol.h"
#include "agent/stale_sockets.h"
#include "attach/agent_client.h"
#include "attach/json_field.h"
#include "cli/command.h"
#include "core/proc/process_view.h"
#include "core/util/json_escape.h"
#include "core/util/proc_file.h"

namespace memprof::cli {
namespace {

struct PsOptions {
  bool json = false;
};

// The process's command line as `ps` shows it (what a server sets in $0 included: "puma:
// cluster worker 1"), or its name in brackets when it has none left (a zombie).
std::string command_line(pid_t pid) {
  auto cmdline = read_proc_file(fmt::format("/proc/{}/cmdline", pid));
  std::string command = cmdline.ok() ? *cmdline : std::string();
  std::replace(command.begin(), command.end(), '\0', ' ');
  command.erase(command.find_last_not_of(' ') + 1);  // a $0 shorter than argv leaves padding
  if (!command.empty()) return command;
  auto comm = read_proc_file(fmt::format("/proc/{}/comm", pid));
  return comm.ok() ? fmt::format("[{}]", comm->substr(0, comm->find('\n'))) : "?";
}

// The pid of each agent socket of this /tmp; then, of the processes with mounts of their own
// (systemd's PrivateTmp, a container), those with a socket in their own /tmp, reached through
// /proc/PID/root under the pid they know themselves by.
std::vector<pid_t> processes_with_agent_sockets() {
  namespace fs = std::filesystem;
  std::vector<pid_t> pids;
  std::error_code error;
  for (const auto& directory : fs::directory_iterator("/tmp", error)) {
    if (!directory.path().filename().string().starts_with("memprof-")) continue;
    agent::remove_stale_sockets(directory.path());  // no probe of each ended process's socket
    std::error_code inner;
    for (const auto& socket : fs::directory_iterator(directory.path(), inner)) {
      if (socket.path().extension() != ".sock") continue;
      pid_t pid = static_cast<pid_t>(std::strtol(socket.path().stem().c_str(), nullptr, 10));
      if (pid > 0) pids.push_back(pid);
    }
  }
  for (const auto& entry : fs::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::strtol(name.c_str(), nullptr, 10));
    if (pid > 0 && !proc::same_mount_namespace(pid) && attach::agent_socket_file(pid).inode != 0)
      pids.push_back(pid);
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

int run_ps(const PsOptions& options) {
  std::vector<std::string> rows;
  for (pid_t pid : processes_with_agent_sockets()) {
    auto hello = attach::agent_request(pid, "hello", {}, std::chrono::seconds(2));
    if (!hello.ok()) continue;  // a process that ended, or someone else's
    const std::string command = command_line(pid);
    if (options.json) {
      std::string escaped;
      append_json_escaped(escaped, command);
      rows.push_back(fmt::format("{{\"pid\":{},\"command\":\"{}\",\"agent\":{}}}", pid, escaped, *hello));
      continue;
    }
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    std::string_view ruby = "-";
    bool loaded = false;
    bool tracking = false;
    if (parser.parse(*hello).get(root) == simdjson::SUCCESS) {
      attach::read_field(root, "ruby", ruby);
      attach::read_field(root, "memprof_loaded", loaded);
      // Without the answer (an agent or extension from before the question: absent or null),
      // only that the gem is loaded is known, and attach loads it to track.
      tracking = loaded;
      attach::read_field(root, "tracking", tracking);
    }
    const char* state = tracking ? "tracking" : loaded ? "gem loaded" : "agent only";
    rows.push_back(fmt::format("{:>8}  {:<8}  {:<10}  {}", pid, ruby, state, command));
  }
  if (options.json) {
    fmt::print("[{}]\n", fmt::join(rows, ","));
    return 0;
  }
  fmt::print("{:>8}  {:<8}  {:<10}  {}\n", "PID", "RUBY", "STATE", "COMMAND");
  for (const std::string& row : rows) fmt::print("{}\n", row);
  return 0;
}

MEMPROF_COMMAND("ps", "Processes with a memprof agent loaded",
                [](CLI::App& sub) -> std::function<int()> {
                  auto options = std::make_shared<PsOptions>();
                  sub.add_flag("--json", options->json, "Print a JSON array");
                  sub.footer("Lists the agents that answer on their sockets (/tmp/memprof-UID/; for a process\n"
                             "with mounts of its own, such as a PrivateTmp service, in its own /tmp).\n"
                             "STATE: tracking (attached: allocations are recorded), gem loaded (by a dump,\n"
                             "or after Memprof.stop: no tracking), agent only (loaded by trace, native or\n"
                             "run --no-track).");
                  return [options] { return run_ps(*options); };
                });

}  // namespace
}  // namespace memprof::cli
