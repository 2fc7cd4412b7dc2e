// Parses one dump_all line (one JSON object) into its fields with simdjson's On-Demand API.
// Only the fields memprof uses are decoded; unknown fields are skipped, so fields that Ruby
// versions add or drop (slot_size, shape_id, ivars, embedded, ...) never break reading.
//
// One bad value costs that value, not the line: a reference that is not an address, a memsize
// that is not a number, a flag that is not a boolean are skipped (and listed, see
// skipped_values()) and the rest of the line is kept. Only a line that is not JSON, or an
// object line without a usable address, is skipped whole.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "heap/heap.h"
#include "heap/line.h"

namespace memprof::heap {

struct DumpRecord {
  // kFreeSlot: a "NONE" line, an empty slot that only dump_all(full: true) writes (its "class"
  // is the next free slot of the free list, not a class).
  enum class Kind { kObject, kRoot, kShape, kFreeSlot };
  Kind kind = Kind::kObject;
  std::string_view type;        // "STRING", "ROOT", "SHAPE", ...
  uint64_t address = 0;         // 0: absent
  uint64_t class_address = 0;   // 0: absent
  uint64_t memsize = 0;
  std::string_view file;        // allocation site, empty when not traced
  uint32_t line = 0;
  uint32_t generation = kNoGeneration;
  uint16_t flags = 0;           // ObjectFlag bits (heap.h)
  uint16_t slot_size = 0;
  std::string_view name;             // CLASS/MODULE "name"
  std::string_view real_class_name;  // singleton classes (Ruby 3.0+): their object's class
  std::string_view detail;      // "imemo_type" or "struct"
  std::string_view root_kind;   // ROOT lines: "root"
  std::string_view value;       // STRING lines: "value" as written, JSON escapes kept, without
  bool has_value = false;       //   its quotes (Ruby writes it for ASCII strings only)
};

// A value skipped in a line that was kept: "references[2] \"zz\" is not an address".
struct SkippedValue {
  std::string field;        // "memsize", "references[2]", "flags.old"
  std::string text;         // the value as written, cut to 40 bytes
  std::string_view reason;  // "is not an address", ...
};

class RecordParser {
 public:
  // Parses `line` into `record` (string views valid until the next call) and appends the
  // referenced addresses to `references`. Returns an empty view when the line is kept (see
  // skipped_values() for what was left out of it), or why it is skipped whole ("invalid JSON",
  // "missing address", ...); then `references` may hold partial data the caller must drop.
  std::string_view parse(const Line& line, DumpRecord& record, std::vector<uint64_t>& references);
  // The values the last parse() skipped in a kept line.
  const std::vector<SkippedValue>& skipped_values() const { return skipped_; }
  // Lines whose bytes were not all UTF-8, read with U+FFFD in place of the bad bytes.
  uint64_t repaired_lines() const { return repaired_lines_; }

 private:
  std::string_view parse_object(const Line& line, DumpRecord& record, std::vector<uint64_t>& references);
  std::string_view parse_huge(const Line& line, DumpRecord& record, std::vector<uint64_t>& references);

  simdjson::ondemand::parser parser_;
  std::vector<SkippedValue> skipped_;
  std::string repaired_;  // the current line repaired (file name escaped, non-UTF-8 bytes replaced), plus padding
  std::string escaped_;   // the current line with its file name escaped
  std::string shortened_;  // a huge line without its String value, plus padding
  std::string padded_;     // a line without kLinePadding bytes after it, plus padding
  uint64_t repaired_lines_ = 0;
};

// "0x7f35c85e0010" -> 0x7f35c85e0010; 0 for anything else (0 is never a valid address).
uint64_t parse_address_text(std::string_view text);

}  // namespace memprof::heap
