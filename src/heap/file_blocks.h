// Reading a plain (uncompressed) dump file in independent blocks with pread(), so that worker
// threads read and parse different parts of the file at once: the kernel's copy from the page
// cache, a large share of the work, is then parallel too. Block k holds the lines that START in
// [k * block_size, (k + 1) * block_size); the line crossing the end belongs to it entirely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/util/huge_page_allocator.h"
#include "core/util/result.h"
#include "core/util/scoped_fd.h"

namespace memprof::heap {

struct FileBlock {
  BigVector<char> bytes;  // what was read, plus kLinePadding spare bytes at the end
  // Instead of `bytes`, for a block whose last line is longer than 64 KB (a String of 100 MB
  // is one line): the file from the block's first page to its end, mapped. Reading such a line
  // into memory would cost a page fault per 4 KB of it; a mapping of the page cache faults in
  // 16 pages at a time and copies nothing.
  ScopedMmap mapped;
  size_t mapped_readable = 0;  // bytes of `mapped` that may be read (whole pages)
  size_t offset = 0;        // where the block's first line starts in data()
  size_t size = 0;          // bytes of whole lines from `offset`

  const char* data() const { return mapped.valid() ? reinterpret_cast<const char*>(mapped.bytes()) : bytes.data(); }
  // Readable bytes from data() on; the lines' last one may have fewer than kLinePadding after it
  // when the block is mapped.
  size_t capacity() const { return mapped.valid() ? mapped_readable : bytes.size(); }
};

// Reads the lines starting in [begin, end) of the file `fd` (of `file_size` bytes) into `block`.
// `name` is used in error messages.
Status read_file_block(int fd, uint64_t file_size, uint64_t begin, uint64_t end,
                       const std::string& name, FileBlock& block);

}  // namespace memprof::heap
