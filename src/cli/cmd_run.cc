// memprof run -- CMD ARGS: starts a command with the agent preloaded and tracks it from the
// start; the other commands (-p PID) then read it while it runs.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "attach/agent_client.h"
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

// Prepends `value` to a ':'- or ' '-separated environment variable.
void prepend_to(const char* name, const std::string& value, const char* separator) {
  std::string joined = value;
  if (const char* existing = std::getenv(name); existing != nullptr && *existing != '\0')
    joined += separator + std::string(existing);
  ::setenv(name, joined.c_str(), 1);
}

// The agent in LD_PRELOAD (the socket, for the -p commands); when tracking, the gem's
// autostart in RUBYOPT, which loads the extension built for the Ruby that runs and starts
// tracking before the program's first line.
[[noreturn]] void exec_with_agent(const std::vector<std::string>& command,
                                  const std::string& agent, bool track) {
  prepend_to("LD_PRELOAD", agent, ":");
  if (auto lib = attach::gem_entry_file(); track && lib.ok()) {
    std::string listed;
    for (const attach::Extension& extension : attach::installed_extensions())
      listed += fmt::format("{}{}|{}|{}", listed.empty() ? "" : ";", extension.ruby_abi,
                            extension.libruby, extension.path);
    ::setenv("MEMPROF_RUN_EXTENSIONS", listed.c_str(), 1);
    std::string autostart = lib->substr(0, lib->size() - 3) + "/autostart.rb";  // lib/memprof/
    prepend_to("RUBYOPT", "-r" + autostart, " ");
    ::setenv("MEMPROF_AGENT_LIB", lib->c_str(), 1);
  }
  std::vector<char*> argv;
  for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  fmt::print(stderr, "memprof: {}: {}\n", command[0], std::strerror(errno));
  ::_exit(127);
}

// Whether the command still runs, without reaping it (the final waitpid does).
bool child_running() {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(g_child), &info, WEXITED | WNOHANG | WNOWAIT) != 0)
    return false;
  return info.si_pid == 0;
}

// Waits for the agent to answer, then says how to read the process.
void announce(pid_t pid, bool track) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (child_running() && std::chrono::steady_clock::now() < deadline) {
    if (attach::agent_listening(pid)) {
      if (track)
        fmt::print(stderr, "memprof: tracking process {} (memprof top -p {})\n", pid, pid);
      else
        fmt::print(stderr, "memprof: agent loaded in process {} (memprof attach -p {})\n", pid,
                   pid);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int run_run(const RunOptions& options) {
  if (options.command.empty()) return fail("memprof run: no command given (memprof run -- CMD)");
  auto agent = attach::agent_library();
  if (!agent.ok()) return fail(agent.message());
  g_child = ::fork();
  if (g_child < 0) return fail(fmt::format("fork: {}", std::strerror(errno)));
  if (g_child == 0) exec_with_agent(options.command, *agent, !options.no_track);
  struct sigaction forward {};
  forward.sa_handler = forward_signal;
  ::sigaction(SIGINT, &forward, nullptr);
  ::sigaction(SIGTERM, &forward, nullptr);
  announce(g_child, !options.no_track);
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
                      "(LD_PRELOAD) and memprof's autostart in RUBYOPT, which starts tracking\n"
                      "before the program's first line. Read the process with memprof\n"
                      "top/stats/leaks/dump -p PID while it runs. The exit status is the\n"
                      "command's. Child processes inherit both.");
                  return [options] { return run_run(*options); };
                });

}  // namespace
}  // namespace memprof::cli
