// Test helper shared by the areas that run programs (the memprof binary, chromium, ruby) to
// completion and check their exit code, stdout and stderr: tests/heap and tests/report. No
// CMakeLists.txt here, so it is no area of its own: each user compiles command_runner.cc, which
// keeps it there whatever MEMPROF_AREAS selects.
#pragma once

#include <string>
#include <vector>

namespace memprof::testing {

struct CommandResult {
  int exit_code = -1;  // -1: could not start or killed by a signal
  std::string out;
  std::string err;
};

// Runs argv[0] (looked up in PATH) with stdin from /dev/null. stdout and stderr go to files, not
// pipes, so a grandchild that keeps them open (Chromium's helpers) cannot make this wait.
CommandResult run_command(const std::vector<std::string>& argv);

// A fresh directory under the test's temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& text);

}  // namespace memprof::testing
