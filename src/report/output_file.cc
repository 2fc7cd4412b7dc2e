#include "report/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/util/scoped_fd.h"

namespace memprof::report {

Status write_output_file(const std::string& path, std::span<const unsigned char> bytes) {
  ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return err("cannot write {}: {}", path, std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return err("cannot write {}: {}", path, std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  // Network and quota-limited filesystems report write errors only at close.
  if (::close(fd.release()) != 0) return err("cannot write {}: {}", path, std::strerror(errno));
  return ok_status();
}

}  // namespace memprof::report
