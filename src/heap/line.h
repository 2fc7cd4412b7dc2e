// One dump line as the parsers see it: a view into a block (block_reader.h) followed by at least
// kLinePadding readable bytes, which simdjson needs after its input.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memprof::heap {

inline constexpr size_t kLinePadding = 64;  // == simdjson::SIMDJSON_PADDING (checked in record_parser.cc)

struct Line {
  const char* data = nullptr;
  size_t size = 0;       // without the '\n' (and a '\r' before it)
  size_t capacity = 0;   // readable bytes from data on: size + kLinePadding or more
  uint64_t number = 0;   // 1-based, within the block
};

}  // namespace memprof::heap
