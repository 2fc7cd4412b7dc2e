// One dump line as the parsers see it: a view into a block (block_reader.h) followed by at least
// kLinePadding readable bytes, which simdjson needs after its input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/util/result.h"
#include "heap/units.h"

namespace memprof::heap {

inline constexpr size_t kLinePadding = 64;  // == simdjson::SIMDJSON_PADDING (checked in record_parser.cc)

struct Line {
  const char* data = nullptr;
  size_t size = 0;       // without the '\n' (and a '\r' before it)
  size_t capacity = 0;   // readable bytes from data on: size + kLinePadding or more
  uint64_t number = 0;   // 1-based, within the block
};

// False when `start`, the first bytes of a line, cannot begin a dump record: after an optional
// UTF-8 byte-order mark and blanks, a record's first byte is '{'.
inline bool may_start_a_record(std::string_view start) {
  if (start.starts_with("\xEF\xBB\xBF")) start.remove_prefix(3);
  const size_t first = start.find_first_not_of(" \t\r");
  return first == std::string_view::npos || start[first] == '{';
}

// The error for an input whose first line is no record and runs past `bytes` without a line
// end (a binary file, /dev/zero): refused before it is read whole.
inline Status first_line_is_not_a_record(const std::string& name, size_t bytes) {
  return err("{}: not a heap dump (line 1: not a JSON object, and no line end in its first {})", name,
             bytes_text(bytes));
}

}  // namespace memprof::heap
