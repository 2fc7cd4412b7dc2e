// Parses a block of complete dump lines into a self-contained ParsedChunk, so that blocks can be
// parsed on several threads and merged in file order (loader.cc). Strings (files, details,
// class names, root kinds) are interned per chunk; the merge maps them to the Heap's ids.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "heap/heap.h"
#include "heap/string_pool.h"

namespace memprof::heap {

struct ParsedChunk {
  // Per object, as in Heap, before resolution: classes and references are raw addresses,
  // sites and details are chunk-local ids (0: none).
  std::vector<uint64_t> address;
  std::vector<ObjectType> type;
  std::vector<uint16_t> flags;
  std::vector<uint64_t> class_address;
  std::vector<uint64_t> memsize;
  std::vector<uint32_t> site;        // index into sites, 0: none
  std::vector<uint32_t> generation;
  std::vector<uint16_t> slot_size;
  std::vector<uint32_t> detail;      // index into strings, 0: none
  std::vector<uint32_t> ref_count;   // references per object, in order in `references`
  std::vector<uint64_t> references;
  std::vector<StringValue> string_values;  // ids relative to the chunk
  std::vector<StringValue> symbol_values;  // likewise

  StringPool strings;                                       // chunk-local, 0 = ""
  std::vector<std::pair<uint32_t, uint32_t>> sites{{0, 0}};  // (file string, line)
  std::vector<std::pair<uint32_t, uint32_t>> class_names;   // (object index in chunk, string)
  std::vector<std::pair<uint32_t, uint32_t>> real_class_names;  // likewise
  struct Root {
    uint32_t kind;  // string
    std::vector<uint64_t> references;
  };
  std::vector<Root> roots;
  uint64_t shape_count = 0;
  uint64_t shape_memsize = 0;
  uint64_t free_slot_count = 0;
  uint64_t lines = 0;            // lines in the chunk
  uint64_t non_blank_lines = 0;
  // Line numbers relative to the chunk (1 = its first line); each list capped at
  // Heap::kMaxBadLinesKept, the counts are totals.
  std::vector<BadLine> bad_lines;   // lines skipped
  uint64_t bad_line_count = 0;
  uint64_t lost_root_lines = 0;     // skipped lines that were ROOT lines
  std::vector<BadLine> bad_values;  // values skipped in kept lines
  uint64_t bad_value_count = 0;
  uint64_t non_utf8_lines = 0;
  bool last_line_skipped = false;   // the chunk's last non-blank line is among the bad lines

  // Empties the chunk for the next block, keeping the arrays' capacity.
  void clear();
};

// Parses a block's lines into `out`, given in one or more pieces in order: a block read in
// slices is parsed slice by slice while each is in the cache.
class ChunkParser {
 public:
  // `file_start`: the first piece begins the file, where a UTF-8 byte order mark (which some
  // editors and tools add) is skipped.
  ChunkParser(ParsedChunk& out, bool file_start);
  ~ChunkParser();
  ChunkParser(const ChunkParser&) = delete;
  ChunkParser& operator=(const ChunkParser&) = delete;

  // Parses `size` bytes at `data`: complete lines, the last may lack its '\n'. `capacity` bytes
  // from `data` must be readable; a line with fewer than kLinePadding readable bytes after it
  // is copied before it is parsed.
  void parse(const char* data, size_t size, size_t capacity);
  // After the last piece.
  void finish();

 private:
  class Builder;
  std::unique_ptr<Builder> builder_;
  bool at_file_start_;
  uint64_t line_number_ = 0;
};

// Parses one piece: ChunkParser's parse() and finish().
void parse_chunk(const char* data, size_t size, size_t capacity, bool file_start, ParsedChunk& out);

}  // namespace memprof::heap
