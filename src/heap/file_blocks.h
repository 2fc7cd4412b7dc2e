// Reading a plain (uncompressed) dump file in independent blocks with pread(), so that worker
// threads read and parse different parts of the file at once: the kernel's copy from the page
// cache, a large share of the work, is then parallel too. Block k holds the lines that START in
// [k * block_size, (k + 1) * block_size); the line crossing the end belongs to it entirely.
//
// A worker reads its block in slices of 256 KB and parses each slice while it is still in the
// cache (1 MB of L2 per core where we measure): copying into a small buffer that stays cached
// and parsing from it costs 5% less CPU than reading the block into a buffer of 4 MB, and the
// buffers take 0.8 MB instead of 13 (Rails dump: peak RSS 41 -> 31 MB). A line longer than a
// slice is read whole into a buffer of its size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/util/huge_page_allocator.h"
#include "core/util/result.h"
#include "heap/chunk_parser.h"

namespace memprof::heap {

inline constexpr size_t kSliceBytes = size_t{256} << 10;

// Parses the lines starting in [begin, end) of the file `fd` (of `file_size` bytes) into
// `parser`, read slice by slice into `buffer` (resized to kSliceBytes + kLinePadding). `name`
// is used in error messages.
Status parse_file_block(int fd, uint64_t file_size, uint64_t begin, uint64_t end,
                        const std::string& name, BigVector<char>& buffer, ChunkParser& parser);

}  // namespace memprof::heap
