#include "heap/file_blocks.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "heap/line.h"

namespace memprof::heap {
namespace {

// Reads [position, position + length) of the file into `out`; fewer bytes only at the end of
// the file.
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

// Parses the line at file offset `start`, whose first kSliceBytes fill `buffer` without ending
// it: the rest is found to its end in small reads, then read whole after them (2 MB pages from
// 2 MB on: a 100 MB String costs 50 page faults) and the line parsed. A mapping of the file,
// used before, was slower (the 100 MB String: 117 -> 93 ms without it) and a file truncated
// while mapped would have killed the process with SIGBUS. Returns the file offset after the line.
Result<uint64_t> parse_long_line(int fd, uint64_t file_size, uint64_t start, const std::string& name,
                                 BigVector<char>& buffer, ChunkParser& parser) {
  if (start == 0 && !may_start_a_record({buffer.data(), kSliceBytes})) {
    return first_line_is_not_a_record(name, kSliceBytes).error();
  }
  MEMPROF_TRY(line_end, find_line_end(fd, file_size, start + kSliceBytes, name));
  // At least the slice: a file that grew past its size at open time may have filled it.
  const auto size = static_cast<size_t>(std::max<uint64_t>(line_end, start + kSliceBytes) - start);
  buffer.resize(size + kLinePadding);  // keeps the slice read already
  MEMPROF_TRY(rest, pread_all(fd, buffer.data() + kSliceBytes, size - kSliceBytes, start + kSliceBytes, name));
  const size_t read = kSliceBytes + rest;  // less than `size` if the file shrank meanwhile
  parser.parse(buffer.data(), read, buffer.size());
  BigVector<char>(kSliceBytes + kLinePadding).swap(buffer);  // not megabytes for every later slice
  return start + read;
}

}  // namespace

Status parse_file_block(int fd, uint64_t file_size, uint64_t begin, uint64_t end,
                        const std::string& name, BigVector<char>& buffer, ChunkParser& parser) {
  end = std::min(end, file_size);
  if (begin >= end) return ok_status();
  buffer.resize(kSliceBytes + kLinePadding);
  // data[0, filled) holds the file from `position` on; the next line to parse starts at
  // data[line_start]. One byte before `begin` tells whether a line starts exactly at `begin`.
  uint64_t position = begin == 0 ? 0 : begin - 1;
  size_t filled = 0, line_start = 0;
  bool found_first_line = begin == 0;
  for (;;) {
    if (filled == kSliceBytes) {  // one line fills the slice
      MEMPROF_TRY(after, parse_long_line(fd, file_size, position, name, buffer, parser));
      if (after >= end) return ok_status();
      position = after;
      filled = 0;
    }
    char* data = buffer.data();
    MEMPROF_TRY(n, pread_all(fd, data + filled, kSliceBytes - filled, position + filled, name));
    const bool at_file_end = n < kSliceBytes - filled;  // or the file shrank: keep what is there
    filled += n;
    if (!found_first_line) {
      // The first owned line starts after the first '\n' at or after begin - 1, before `end`:
      // a block inside one long line owns nothing.
      const auto scan = static_cast<size_t>(std::min<uint64_t>(filled, end - position));
      const void* newline = std::memchr(data, '\n', scan);
      if (newline == nullptr) {
        if (at_file_end || position + filled >= end) return ok_status();
        position += filled;
        filled = 0;
        continue;
      }
      line_start = static_cast<size_t>(static_cast<const char*>(newline) - data) + 1;
      if (position + line_start >= end) return ok_status();
      found_first_line = true;
    }
    // The last owned line ends at the first '\n' at or after end - 1 (every line kept from an
    // earlier slice started before `end`).
    const auto search = static_cast<size_t>(std::max<uint64_t>(end - 1, position + line_start) - position);
    const void* last = search < filled ? std::memchr(data + search, '\n', filled - search) : nullptr;
    bool done = true;
    size_t parse_to = filled;
    if (last != nullptr) {
      parse_to = static_cast<size_t>(static_cast<const char*>(last) - data) + 1;
    } else if (!at_file_end) {  // parse the whole lines, keep the one cut by the slice's end
      done = false;
      const void* newline = ::memrchr(data + line_start, '\n', filled - line_start);
      parse_to = newline ? static_cast<size_t>(static_cast<const char*>(newline) - data) + 1 : line_start;
    }
    if (parse_to > line_start) parser.parse(data + line_start, parse_to - line_start, buffer.size() - line_start);
    if (done) return ok_status();
    filled -= parse_to;
    std::memmove(data, data + parse_to, filled);
    position += parse_to;
    line_start = 0;
  }
}

}  // namespace memprof::heap
