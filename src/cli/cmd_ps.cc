// memprof ps: the processes that have a memprof agent, and what it does there.
#include <dirent.h>
#include <unistd.h>

#include <simdjson.h>

#include "attach/json_field.h"

#include <filesystem>

#include <fmt/format.h>

#include "agent/protocol.h"
#include "agent/stale_sockets.h"
#include "attach/agent_client.h"
#include "cli/command.h"
#include "core/util/proc_file.h"

namespace memprof::cli {
namespace {

struct PsOptions {
  bool json = false;
};

int run_ps(const PsOptions& options) {
  namespace fs = std::filesystem;
  std::error_code error;
  std::vector<std::string> rows;
  for (const auto& directory : fs::directory_iterator("/tmp", error)) {
    std::string name = directory.path().filename().string();
    if (!name.starts_with("memprof-")) continue;
    agent::remove_stale_sockets(directory.path());  // no probe of each ended process's socket
    std::error_code inner;
    for (const auto& socket : fs::directory_iterator(directory.path(), inner)) {
      if (socket.path().extension() != ".sock") continue;
      pid_t pid = static_cast<pid_t>(std::strtol(socket.path().stem().c_str(), nullptr, 10));
      if (pid <= 0) continue;
      auto hello = attach::agent_request(pid, "hello", {}, std::chrono::seconds(2));
      if (!hello.ok()) continue;  // a process that ended, or someone else's
      auto comm = read_proc_file(fmt::format("/proc/{}/comm", pid));
      std::string command = comm.ok() ? comm->substr(0, comm->find('\n')) : "?";
      if (options.json) {
        rows.push_back(fmt::format("{{\"pid\":{},\"command\":\"{}\",\"agent\":{}}}", pid, command,
                                   *hello));
        continue;
      }
      simdjson::dom::parser parser;
      simdjson::dom::element root;
      std::string_view ruby = "-";
      bool loaded = false;
      if (parser.parse(*hello).get(root) == simdjson::SUCCESS) {
        attach::read_field(root, "ruby", ruby);
        attach::read_field(root, "memprof_loaded", loaded);
      }
      rows.push_back(fmt::format("{:>8}  {:<16}  {:<8}  {}", pid, command, ruby,
                                 loaded ? "tracking" : "agent only"));
    }
  }
  if (options.json) {
    fmt::print("[{}]\n", fmt::join(rows, ","));
    return 0;
  }
  fmt::print("{:>8}  {:<16}  {:<8}  {}\n", "PID", "COMMAND", "RUBY", "STATE");
  for (const std::string& row : rows) fmt::print("{}\n", row);
  return 0;
}

MEMPROF_COMMAND("ps", "Processes with a memprof agent loaded",
                [](CLI::App& sub) -> std::function<int()> {
                  auto options = std::make_shared<PsOptions>();
                  sub.add_flag("--json", options->json, "Print a JSON array");
                  sub.footer("Lists the agents that answer on their sockets (/tmp/memprof-UID/).");
                  return [options] { return run_ps(*options); };
                });

}  // namespace
}  // namespace memprof::cli
