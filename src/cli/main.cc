// memprof: the command-line front end. Subcommands register themselves (see command.h).
#include <algorithm>
#include <cstdio>
#include <new>

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
    return fail(fmt::format("{} (see memprof {}--help)", e.what(), command_given ? std::string(argv[1]) + " " : ""));
  }
  if (!chosen) return fail("no command given (see memprof --help)");
  // What an input asks for can exceed the memory there is (a line of gigabytes, a ulimit -v):
  // one line and exit 1, not an abort.
  try {
    return chosen();
  } catch (const std::bad_alloc&) {
    return fail("out of memory");
  }
}
