// Splits a ByteSource into lines without copying them, in a buffer that grows only to the longest
// line (an ARRAY of a million elements is one 20 MB line). Every line handed out is followed by at
// least kLinePadding readable bytes, which simdjson needs after its input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/util/result.h"
#include "heap/byte_source.h"

namespace memprof::heap {

inline constexpr size_t kLinePadding = 64;  // == simdjson::SIMDJSON_PADDING (checked in .cc)

struct Line {
  const char* data = nullptr;
  size_t size = 0;       // without the '\n' (and a '\r' before it)
  size_t capacity = 0;   // readable bytes from data on: size + kLinePadding or more
  uint64_t number = 0;   // 1-based
};

class LineReader {
 public:
  explicit LineReader(ByteSource& source, size_t chunk_size = 1 << 20);

  // The next line; false at the end of the input. The line stays valid until the next call.
  Result<bool> next(Line& line);
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  Status fill();

  ByteSource& source_;
  std::vector<char> buffer_;  // data lives in [begin_, end_); kLinePadding spare bytes at the end
  size_t begin_ = 0;
  size_t end_ = 0;
  size_t scanned_ = 0;  // bytes from begin_ known to hold no '\n'
  bool eof_ = false;
  uint64_t line_number_ = 0;
  uint64_t bytes_read_ = 0;
};

}  // namespace memprof::heap
