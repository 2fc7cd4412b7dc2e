// memprof: the command-line front end. Subcommands register themselves (see command.h).
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <new>
#include <system_error>

#include "cli/command.h"
#include "core/util/malloc_policy.h"

namespace memprof::cli {

std::vector<Command>& commands() {
  static std::vector<Command> all;
  return all;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "memprof: %s\n", message.c_str());
  return 1;
}

namespace {

// The first option after the command's name in argv that `command` does not have, as given
// ("--duration"), or "".
// CLI11 says "The following arguments were not expected: 0 --duration", its list reversed.
std::string unknown_option(const CLI::App& command, int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;
    std::string name(arg.substr(0, arg.find('=')));
    // "-p123": a short option with its value attached.
    if (name[1] != '-') name.resize(2);
    if (command.get_option_no_throw(name) == nullptr && name != "-h" && name != "--help") return name;
  }
  return "";
}

}  // namespace

}  // namespace memprof::cli

int main(int argc, char** argv) {
  using namespace memprof::cli;
  memprof::reuse_freed_memory();  // before any command starts a thread
  CLI::App app{"memprof: memory profiler and function-hooking toolkit for live Linux processes"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "memprof 0.1.0");

  auto& all = commands();
  std::sort(all.begin(), all.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  const bool command_given = argc > 1 && argv[1][0] != '-';
  if (command_given &&
      std::none_of(all.begin(), all.end(), [&](const Command& c) { return c.name == argv[1]; })) {
    return fail(fmt::format("unknown command '{}' (see memprof --help)", argv[1]));
  }
  // Only the command given gets its options: setting up all twenty took ~1 ms of every run
  // (CLI11 builds each option's validators and help strings). The others stay listed, with
  // their summaries, for `memprof --help`.
  std::function<int()> chosen;
  for (auto& command : all) {
    CLI::App* sub = app.add_subcommand(command.name, command.summary);
    if (command_given && command.name != argv[1]) continue;
    auto run = command.setup(*sub);
    sub->callback([&chosen, run] { chosen = run; });
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with exit code 0: let CLI11 print them.
    if (e.get_exit_code() == 0) return app.exit(e);
    // A command's options are explained by its own --help.
    const std::string see = fmt::format("see memprof {}--help", command_given ? std::string(argv[1]) + " " : "");
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr && command_given) {
      if (std::string option = unknown_option(*app.get_subcommand(argv[1]), argc, argv); !option.empty())
        return fail(fmt::format("{} has no option {} ({})", argv[1], option, see));
    }
    // CLI11: "Could not convert: --pid = abc".
    constexpr std::string_view kNotConverted = "Could not convert: ";
    if (std::string_view what = e.what(); dynamic_cast<const CLI::ConversionError*>(&e) != nullptr &&
                                          what.starts_with(kNotConverted) && what.find(" = ") != std::string_view::npos) {
      what.remove_prefix(kNotConverted.size());
      const size_t equals = what.find(" = ");
      return fail(fmt::format("{}: '{}' is not a valid value ({})", what.substr(0, equals), what.substr(equals + 3), see));
    }
    return fail(fmt::format("{} ({})", e.what(), see));
  }
  if (!chosen) return fail("no command given (see memprof --help)");
  // What an input asks for can exceed the memory there is (a line of gigabytes, a ulimit -v):
  // one line and exit 1, not an abort.
  try {
    return chosen();
  } catch (const std::bad_alloc&) {
    return fail("out of memory");
  } catch (const std::system_error& e) {
    // fmt::print throws when its output cannot be written: the reader of a pipe went away
    // (`memprof trace -- CMD 2>&1 | head`: the trace's own message about the broken pipe
    // failed too). Uncaught, it aborted without unwinding, so a session's clean-up never ran;
    // here the stack is unwound (sessions stopped, patched bytes restored), and memprof ends
    // as a writer into a closed pipe does, by SIGPIPE (commands that ignore it meanwhile
    // included).
    if (e.code() == std::errc::broken_pipe) {
      ::signal(SIGPIPE, SIG_DFL);
      sigset_t pipe_only;
      sigemptyset(&pipe_only);
      sigaddset(&pipe_only, SIGPIPE);
      ::sigprocmask(SIG_UNBLOCK, &pipe_only, nullptr);
      ::raise(SIGPIPE);
    }
    return fail(e.what());
  }
}
