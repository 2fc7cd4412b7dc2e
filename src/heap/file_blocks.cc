#include "heap/file_blocks.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "heap/line.h"

namespace memprof::heap {
namespace {

// Reads [position, position + length) of the file into `out`, fewer bytes at the end of file.
Result<size_t> pread_all(int fd, char* out, size_t length, uint64_t position, const std::string& name) {
  size_t total = 0;
  while (total < length) {
    ssize_t n = ::pread(fd, out + total, length - total, static_cast<off_t>(position + total));
    if (n < 0) {
      if (errno == EINTR) continue;
      return err("{}: {}", name, std::strerror(errno));
    }
    if (n == 0) break;
    total += static_cast<size_t>(n);
  }
  return total;
}

}  // namespace

Status read_file_block(int fd, uint64_t file_size, uint64_t begin, uint64_t end,
                       const std::string& name, FileBlock& block) {
  block.offset = 0;
  block.size = 0;
  end = std::min(end, file_size);
  if (begin >= end) return ok_status();
  // One byte before `begin` tells whether a line starts exactly at `begin`.
  const uint64_t start = begin == 0 ? 0 : begin - 1;
  size_t wanted = static_cast<size_t>(end - start) + (64 << 10);  // room for the last line
  size_t filled = 0;
  uint64_t first_line = begin == 0 ? 0 : UINT64_MAX;  // file position of the first owned line
  for (;;) {
    if (block.bytes.size() < wanted + kLinePadding) block.bytes.resize(wanted + kLinePadding);
    MEMPROF_TRY(n, pread_all(fd, block.bytes.data() + filled, wanted - filled, start + filled, name));
    size_t scan_from = filled;
    filled += n;
    const bool at_eof = start + filled >= file_size || n == 0;
    const char* data = block.bytes.data();
    if (first_line == UINT64_MAX) {
      const void* newline = std::memchr(data + scan_from, '\n', filled - scan_from);
      if (newline != nullptr) {
        first_line = start + static_cast<uint64_t>(static_cast<const char*>(newline) - data) + 1;
        if (first_line >= end) return ok_status();  // a line from before covers the whole block
      } else if (at_eof) {
        return ok_status();
      } else {
        wanted *= 2;
        continue;
      }
    }
    // The last owned line ends at the first '\n' at or after end - 1.
    size_t search_from = static_cast<size_t>(std::max<uint64_t>(end - 1, first_line) - start);
    if (search_from < filled) {
      const void* newline = std::memchr(data + search_from, '\n', filled - search_from);
      if (newline != nullptr || at_eof) {
        size_t stop = newline != nullptr
                          ? static_cast<size_t>(static_cast<const char*>(newline) - data) + 1
                          : filled;
        block.offset = static_cast<size_t>(first_line - start);
        block.size = stop - block.offset;
        return ok_status();
      }
    } else if (at_eof) {  // the file shrank while being read: keep what is there
      block.offset = static_cast<size_t>(first_line - start);
      block.size = filled > block.offset ? filled - block.offset : 0;
      return ok_status();
    }
    wanted *= 2;  // the last line is longer than the slack: read more of it
  }
}

}  // namespace memprof::heap
