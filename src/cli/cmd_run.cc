// memprof run -- CMD ARGS: starts a command with the agent preloaded and tracks it from the
// start; the other commands (-p PID) then read it while it runs.
#include <signal.h>

#include "attach/installation.h"
#include "attach/launched_command.h"
#include "cli/command.h"
#include "core/util/print_stderr.h"

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

// When tracking, the gem's autostart in RUBYOPT, which loads the extension built for the Ruby
// that runs and starts tracking before the program's first line.
attach::LaunchedCommand::Environment tracking_environment() {
  auto lib = attach::gem_entry_file();
  if (!lib.ok()) return {};
  std::string listed;
  for (const attach::Extension& extension : attach::installed_extensions())
    listed += fmt::format("{}{}|{}|{}", listed.empty() ? "" : ";", extension.ruby_abi, extension.libruby,
                          extension.path);
  std::string autostart = lib->substr(0, lib->size() - 3) + "/autostart.rb";  // lib/memprof/
  return {{"MEMPROF_RUN_EXTENSIONS", listed},
          {"RUBYOPT", attach::prepended_to("RUBYOPT", "-r" + autostart, " ")},
          {"MEMPROF_AGENT_LIB", *lib}};
}

// Waits for the agent to answer, then says how to read the process, or why it cannot be read
// (a command that ended at once needs no word).
void announce(const attach::LaunchedCommand& command, bool track) {
  if (Status ready = command.wait_for_agent(); !ready.ok()) {
    if (command.running()) print_stderr("memprof: warning: {}; it runs without memprof\n", ready.message());
    return;
  }
  pid_t pid = command.pid();
  // The agent answers before the command's own code runs: a Ruby program is tracked from its
  // first line, anything else only carries the agent (trace and native work on it).
  if (track)
    print_stderr("memprof: agent loaded in process {}; a Ruby program is tracked from its first line "
               "(memprof top -p {})\n", pid, pid);
  else
    print_stderr("memprof: agent loaded in process {} (memprof attach -p {})\n", pid, pid);
}

int run_run(const RunOptions& options) {
  if (options.command.empty()) return fail("memprof run: no command given (memprof run -- CMD)");
  auto command = attach::LaunchedCommand::start(
      options.command, options.no_track ? attach::LaunchedCommand::Environment{} : tracking_environment());
  if (!command.ok()) return fail(command.message());
  g_child = command->pid();
  struct sigaction forward {};
  forward.sa_handler = forward_signal;
  ::sigaction(SIGINT, &forward, nullptr);
  ::sigaction(SIGTERM, &forward, nullptr);
  announce(*command, !options.no_track);
  return command->wait();
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
