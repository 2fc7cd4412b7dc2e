// Parses one dump_all line (one JSON object) into its fields with simdjson's On-Demand API.
// Only the fields memprof uses are decoded; unknown fields are skipped, so fields that Ruby
// versions add or drop (slot_size, shape_id, ivars, embedded, ...) never break reading.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "heap/heap.h"
#include "heap/line.h"

namespace memprof::heap {

struct DumpRecord {
  enum class Kind { kObject, kRoot, kShape };
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
  std::string_view name;        // CLASS/MODULE "name", else "real_class_name" (see heap.h)
  std::string_view detail;      // "imemo_type" or "struct"
  std::string_view root_kind;   // ROOT lines: "root"
};

class RecordParser {
 public:
  // Parses `line` into `record` (string views valid until the next call) and appends the
  // referenced addresses to `references`. Returns an empty view on success, or a short reason
  // ("invalid JSON", "missing address", ...); on failure `references` may hold partial data
  // the caller must drop.
  std::string_view parse(const Line& line, DumpRecord& record, std::vector<uint64_t>& references);

 private:
  simdjson::ondemand::parser parser_;
};

// "0x7f35c85e0010" -> 0x7f35c85e0010; 0 for anything else (0 is never a valid address).
uint64_t parse_address_text(std::string_view text);

}  // namespace memprof::heap
