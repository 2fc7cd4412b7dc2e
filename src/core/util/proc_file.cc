#include "core/util/proc_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/util/scoped_fd.h"

namespace memprof {

Result<std::string> read_proc_file(const std::string& path, int* error_number) {
  auto failure = [&]() -> Error {
    if (error_number != nullptr) *error_number = errno;
    return err("{}: {}", path, std::strerror(errno));
  };
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return failure();
  std::string text;
  char buffer[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failure();
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

std::string status_field(std::string_view status, std::string_view key) {
  size_t at = 0;
  while (at < status.size()) {
    size_t end = std::min(status.find('\n', at), status.size());
    std::string_view line = status.substr(at, end - at);
    if (line.starts_with(key) && line.size() > key.size() && line[key.size()] == ':') {
      line.remove_prefix(key.size() + 1);
      size_t start = line.find_first_not_of(" \t");
      return start == std::string_view::npos ? std::string() : std::string(line.substr(start));
    }
    at = end + 1;
  }
  return {};
}

}  // namespace memprof
