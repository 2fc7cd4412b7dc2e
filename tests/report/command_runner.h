// Test helper: runs a program (the memprof binary, chromium, ruby) to completion and captures
// its exit code, stdout and stderr.
#pragma once

#include <string>
#include <vector>

namespace memprof::report::testing {

struct CommandResult {
  int exit_code = -1;  // -1: could not start or killed by a signal
  std::string out;
  std::string err;
};

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

}  // namespace memprof::report::testing
