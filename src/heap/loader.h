// Loading a dump_all file into a Heap (heap.h).
//
// Input: ObjectSpace.dump_all output of Ruby 2.7-3.4, one JSON object per line, plain, gzip or
// zstd compressed (detected by the first bytes, not the file name). The file is streamed in
// chunks: memory grows with the number of objects and references, not with the file size.
//
// A line that cannot be used (truncated, invalid JSON, no "address", a non-hex address) is
// recorded in Heap::bad_lines with its 1-based line number and skipped; loading goes on. Errors
// returned as values are those that make the whole input unusable: a missing or unreadable
// file, an empty file, a corrupt compressed stream, or a file in which no line is a dump record
// ("not a heap dump").
#pragma once

#include <cstdio>
#include <span>
#include <string>

#include "core/util/result.h"
#include "heap/heap.h"

namespace memprof::heap {

struct LoadOptions {
  // Where bad lines are reported ("memprof: DUMP:LINE: message (line skipped)"), one line each,
  // the first 20 of them, once the input has shown one valid record (an input that is not a
  // dump gets a single error instead). nullptr: only recorded in Heap::bad_lines.
  std::FILE* warnings = nullptr;
  // Bytes of lines per block parsed on a worker thread (lines longer than a block are fine).
  // A little under 4 MB: a file block's buffer holds the block, 64 KB for the line crossing
  // its end, and simdjson's padding, and it lives in 2 MB pages (huge_page_allocator.h): 4 MB
  // exactly would take a third page per block in flight.
  size_t block_size = (size_t{4} << 20) - (size_t{128} << 10);
};

// How messages name the dump at `path`: "standard input" for "-", else the path.
inline std::string dump_display_name(const std::string& path) { return path == "-" ? "standard input" : path; }

// `path` "-" reads standard input.
Result<Heap> load_heap(const std::string& path, const LoadOptions& options = {});

// The same from bytes already in memory (tests, the fuzzer). `name` is used in messages.
Result<Heap> load_heap_from_bytes(std::span<const unsigned char> bytes, const std::string& name,
                                  const LoadOptions& options = {});

}  // namespace memprof::heap
