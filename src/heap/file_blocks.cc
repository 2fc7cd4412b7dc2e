#include "heap/file_blocks.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "core/util/page_size.h"
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

// The file position just after the first '\n' at or after `position`, or the file size when
// there is none: scanned in small reads, so that finding the end of a 100 MB line costs one
// pass over it and no buffer of its size.
Result<uint64_t> find_line_end(int fd, uint64_t file_size, uint64_t position, const std::string& name) {
  std::vector<char> scratch(size_t{1} << 16);
  while (position < file_size) {
    MEMPROF_TRY(n, pread_all(fd, scratch.data(), scratch.size(), position, name));
    if (n == 0) break;
    if (const void* newline = std::memchr(scratch.data(), '\n', n)) {
      return position + static_cast<uint64_t>(static_cast<const char*>(newline) - scratch.data()) + 1;
    }
    position += n;
  }
  return file_size;
}

// Maps the file from `start` (rounded down to a page) to its end and makes it the block, whose
// lines begin at `first` and end at the first '\n' at or after `unread` (the caller read up to
// there without finding it). false when the file cannot be mapped.
bool map_block(int fd, uint64_t file_size, uint64_t start, uint64_t first, uint64_t unread, FileBlock& block) {
  const uint64_t page = page_size();
  const uint64_t base = start / page * page;
  const auto length = static_cast<size_t>(file_size - base);
  void* address = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(base));
  if (address == MAP_FAILED) return false;
  ::madvise(address, length, MADV_SEQUENTIAL);
  block.mapped = ScopedMmap(address, length);
  block.mapped_readable = static_cast<size_t>((length + page - 1) / page * page);
  const char* data = block.data();
  const auto search = static_cast<size_t>(unread - base);
  const void* newline = std::memchr(data + search, '\n', length - search);
  const size_t stop = newline ? static_cast<size_t>(static_cast<const char*>(newline) - data) + 1 : length;
  block.offset = static_cast<size_t>(first - base);
  block.size = stop - block.offset;
  return true;
}

}  // namespace

Status read_file_block(int fd, uint64_t file_size, uint64_t begin, uint64_t end,
                       const std::string& name, FileBlock& block) {
  block.offset = 0;
  block.size = 0;
  block.mapped.reset();
  end = std::min(end, file_size);
  if (begin >= end) return ok_status();
  // One byte before `begin` tells whether a line starts exactly at `begin`; the slack after
  // `end` usually holds the rest of the last line.
  const uint64_t start = begin == 0 ? 0 : begin - 1;
  const size_t wanted = static_cast<size_t>(end - start) + (64 << 10);
  if (block.bytes.size() < wanted + kLinePadding) block.bytes.resize(wanted + kLinePadding);
  MEMPROF_TRY(n, pread_all(fd, block.bytes.data(), wanted, start, name));
  size_t filled = n;
  const char* data = block.bytes.data();
  // The first owned line starts after the first '\n' at or after begin - 1, before `end`: a
  // block inside one long line owns nothing (and reads no more of it).
  uint64_t first = 0;
  if (begin != 0) {
    const size_t scan = std::min(filled, static_cast<size_t>(end - start));
    const void* newline = std::memchr(data, '\n', scan);
    if (newline == nullptr) return ok_status();
    first = start + static_cast<uint64_t>(static_cast<const char*>(newline) - data) + 1;
    if (first >= end) return ok_status();
  }
  // The last owned line ends at the first '\n' at or after end - 1.
  uint64_t stop = start + filled;  // the file shrank while being read: keep what is there
  const size_t search_from = static_cast<size_t>(std::max<uint64_t>(end - 1, first) - start);
  const void* newline =
      search_from < filled ? std::memchr(data + search_from, '\n', filled - search_from) : nullptr;
  if (newline != nullptr) {
    stop = start + static_cast<uint64_t>(static_cast<const char*>(newline) - data) + 1;
  } else if (start + filled < file_size && filled == wanted) {
    if (map_block(fd, file_size, start, first, start + filled, block)) return ok_status();
    // A line longer than the slack and no mapping: find its end, then read the rest of it at once.
    MEMPROF_TRY(line_end, find_line_end(fd, file_size, start + filled, name));
    const size_t need = static_cast<size_t>(line_end - start);
    block.bytes.resize(need + kLinePadding);
    MEMPROF_TRY(more, pread_all(fd, block.bytes.data() + filled, need - filled, start + filled, name));
    filled += more;
    stop = start + filled;
  }
  block.offset = static_cast<size_t>(first - start);
  block.size = static_cast<size_t>(stop - first);
  return ok_status();
}

}  // namespace memprof::heap
