// A line for a person on stderr, which may be gone: `memprof trace -- CMD 2>&1 | head` closes it
// mid-run, and a daemon may run with fd 2 closed. fmt::print(stderr, ...) throws then: in the
// CLI that cut a command's clean-up short (it aborted, leaving a launched command unwaited
// for); in the gem, inside the user's process, it would have aborted that process. A line that
// cannot be written is dropped instead.
#pragma once

#include <cstdio>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace memprof {

template <typename... Args>
void print_stderr(fmt::format_string<Args...> format, Args&&... args) {
  const std::string text = fmt::format(format, std::forward<Args>(args)...);
  (void)std::fwrite(text.data(), 1, text.size(), stderr);
}

}  // namespace memprof
