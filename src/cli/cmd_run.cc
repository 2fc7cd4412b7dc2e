// memprof run -- CMD ARGS: starts a command with the agent preloaded and tracks it from the
// start; the other commands (-p PID) then read it while it runs.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include <simdjson.h>

#include "attach/agent_client.h"
#include "attach/attach_flow.h"
#include "attach/installation.h"
#include "cli/command.h"

namespace memprof::cli {
namespace {

struct RunOptions {
  std::vector<std::string> command;
  bool no_track = false;
};

pid_t g_child = 0;

void forward_signal(int signal) {
  if (g_child > 0) ::kill(g_child, signal);
}

[[noreturn]] void exec_with_agent(const std::vector<std::string>& command,
                                  const std::string& agent) {
  std::string preload = agent;
  if (const char* existing = std::getenv("LD_PRELOAD"); existing != nullptr && *existing != '\0')
    preload += std::string(":") + existing;
  ::setenv("LD_PRELOAD", preload.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  fmt::print(stderr, "memprof: {}: {}\n", command[0], std::strerror(errno));
  ::_exit(127);
}

bool child_running() {
  int status = 0;
  return ::waitpid(g_child, &status, WNOHANG | WNOWAIT | __WALL) == 0;
}

// Waits for the agent to answer and Ruby to boot, then starts tracking.
void start_tracking(pid_t pid) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (child_running() && std::chrono::steady_clock::now() < deadline) {
    auto hello = attach::agent_request(pid, "hello", {}, std::chrono::seconds(2));
    if (hello.ok()) {
      if (hello->find("\"ruby\":null") != std::string::npos) {
        fmt::print(stderr, "memprof: process {} is not Ruby; the agent serves it, nothing is "
                           "tracked\n", pid);
        return;
      }
      if (hello->find("\"ruby_ready\":true") != std::string::npos) {
        auto attached = attach::attach_ruby(pid);
        if (attached.ok())
          fmt::print(stderr, "memprof: tracking process {} (memprof top -p {})\n", pid, pid);
        else
          fmt::print(stderr, "memprof: {}\n", attached.message());
        return;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

int run_run(const RunOptions& options) {
  if (options.command.empty()) return fail("memprof run: no command given (memprof run -- CMD)");
  auto agent = attach::agent_library();
  if (!agent.ok()) return fail(agent.message());
  g_child = ::fork();
  if (g_child < 0) return fail(fmt::format("fork: {}", std::strerror(errno)));
  if (g_child == 0) exec_with_agent(options.command, *agent);
  struct sigaction forward {};
  forward.sa_handler = forward_signal;
  ::sigaction(SIGINT, &forward, nullptr);
  ::sigaction(SIGTERM, &forward, nullptr);
  if (!options.no_track) start_tracking(g_child);
  int status = 0;
  while (::waitpid(g_child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

MEMPROF_COMMAND("run", "Run a command with the agent loaded, tracking from the start",
                [](CLI::App& sub) -> std::function<int()> {
                  auto options = std::make_shared<RunOptions>();
                  sub.add_flag("--no-track", options->no_track,
                               "Load the agent only; start tracking later with memprof attach");
                  sub.add_option("command", options->command, "Command and its arguments")
                      ->required();
                  sub.footer(
                      "memprof run -- ruby app.rb: starts the command with the agent preloaded\n"
                      "(LD_PRELOAD) and starts tracking as soon as Ruby has booted. Read the\n"
                      "process with memprof top/stats/leaks/dump -p PID while it runs. The exit\n"
                      "status is the command's. Child processes inherit the agent.");
                  return [options] { return run_run(*options); };
                });

}  // namespace
}  // namespace memprof::cli
