#include "core/util/whole_lines.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace memprof {

std::vector<std::string_view> whole_line_pieces(std::string_view text, size_t limit) {
  std::vector<std::string_view> pieces;
  while (!text.empty()) {
    size_t end = text.size();
    if (text.size() > limit) {
      if (const size_t last = text.rfind('\n', limit - 1); last != std::string_view::npos)
        end = last + 1;  // the most whole lines that fit
      else if (const size_t first = text.find('\n', limit); first != std::string_view::npos)
        end = first + 1;  // a line longer than the limit, alone
    }
    pieces.push_back(text.substr(0, end));
    text.remove_prefix(end);
  }
  return pieces;
}

// (A pipe takes up to PIPE_BUF bytes at once or not at all, so for whole_line_pieces a retry
// continues only a piece longer than that, or one written to a file or terminal.)
int write_fully(int fd, std::string_view piece) {
  while (!piece.empty()) {
    const ssize_t n = ::write(fd, piece.data(), piece.size());
    if (n >= 0) {
      piece.remove_prefix(static_cast<size_t>(n));
    } else if (errno == EAGAIN) {
      pollfd ready{.fd = fd, .events = POLLOUT, .revents = 0};
      if (::poll(&ready, 1, -1) < 0 && errno != EINTR) return errno;
    } else if (errno != EINTR) {
      return errno;
    }
  }
  return 0;
}

int write_whole_lines(int fd, std::string_view text) {
  // A write to a regular file holds its offset for the whole write on Linux: one write is
  // whole however long, and saves a system call per PIPE_BUF bytes.
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  for (std::string_view piece : whole_line_pieces(text, regular ? std::max<size_t>(text.size(), 1) : PIPE_BUF))
    if (const int error = write_fully(fd, piece); error != 0) return error;
  return 0;
}

}  // namespace memprof
