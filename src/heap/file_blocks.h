// Reading a plain (uncompressed) dump file in independent blocks with pread(), so that worker
// threads read and parse different parts of the file at once: the kernel's copy from the page
// cache, a large share of the work, is then parallel too. Block k holds the lines that START in
// [k * block_size, (k + 1) * block_size); the line crossing the end belongs to it entirely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/util/result.h"

namespace memprof::heap {

struct FileBlock {
  std::vector<char> bytes;  // what was read, plus kLinePadding spare bytes at the end
  size_t offset = 0;        // where the block's first line starts in `bytes`
  size_t size = 0;          // bytes of whole lines from `offset`
};

// Reads the lines starting in [begin, end) of the file `fd` (of `file_size` bytes) into `block`.
// `name` is used in error messages.
Status read_file_block(int fd, uint64_t file_size, uint64_t begin, uint64_t end,
                       const std::string& name, FileBlock& block);

}  // namespace memprof::heap
