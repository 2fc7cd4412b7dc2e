// Subcommand registry. Each subcommand lives in its own file (cmd_<name>.cc) and registers itself
// with a static MEMPROF_COMMAND(...) object; main.cc knows none of them by name. Command files are
// compiled straight into the executable (not an archive), so their registrations are never dropped.
//
// A command's run function returns the process exit code. Report failures as one line on stderr
// through fail() and return its non-zero code; never exit() from a command.
#pragma once

#include <sys/types.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace memprof::cli {

struct Command {
  std::string name;
  std::string summary;
  // Adds options to `sub` and returns the function to run once they are parsed.
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<Command>& commands();

struct CommandRegistration {
  explicit CommandRegistration(Command command) { commands().push_back(std::move(command)); }
};

// Prints "memprof: <message>" on stderr and returns exit code 1.
int fail(const std::string& message);

// A count option (rows, rounds): CLI11 reads "-1" into a size_t as 18446744073709551615, so
// every count is checked against a range and "-1" is a usage error.
inline constexpr size_t kMostRows = 100'000'000;
inline CLI::Option* add_count_option(CLI::App& sub, const std::string& name, size_t& value,
                                     const std::string& help, size_t least = 0) {
  return sub.add_option(name, value, help)->check(CLI::Range(least, kMostRows));
}

// For an option whose empty value would be taken for "not given": a filter would select
// everything, an output path would be stdout.
inline CLI::Validator not_empty() {
  return CLI::Validator(
      [](const std::string& value) { return value.empty() ? std::string("must not be empty") : std::string(); }, "",
      "not empty");
}

// -p PID. Only a positive number names one process (0 and negative numbers are process groups
// to kill(2)); said as such instead of "no such process: 0".
inline CLI::Option* add_pid_option(CLI::App& sub, pid_t& pid, const std::string& help) {
  auto positive = [](std::string& value) -> std::string {
    char* end = nullptr;
    const long number = std::strtol(value.c_str(), &end, 10);
    if (end != value.c_str() && *end == '\0' && number <= 0)
      return fmt::format("a process id is a positive number, not {}", value);
    return {};  // the conversion says what else is wrong
  };
  return sub.add_option("-p,--pid", pid, help)->check(CLI::Validator(positive, "PID"));
}

}  // namespace memprof::cli

// __COUNTER__, not __LINE__: command files are compiled several to a unit (src/cli/CMakeLists.txt),
// where two registrations can sit on the same line number.
#define MEMPROF_COMMAND_CONCAT2(a, b) a##b
#define MEMPROF_COMMAND_CONCAT(a, b) MEMPROF_COMMAND_CONCAT2(a, b)
#define MEMPROF_COMMAND(...)                                                     \
  static const ::memprof::cli::CommandRegistration MEMPROF_COMMAND_CONCAT(       \
      memprof_command_, __COUNTER__){::memprof::cli::Command{__VA_ARGS__}}
