#include "heap/chunk_parser.h"

#include <cstring>
#include <limits>

#include "heap/line.h"
#include "heap/record_parser.h"

namespace memprof::heap {
namespace {

bool blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

class ChunkBuilder {
 public:
  explicit ChunkBuilder(ParsedChunk& chunk) : chunk_(chunk) {}

  void line(const Line& line) {
    ++chunk_.lines;
    if (line.size == 0 || blank({line.data, line.size})) return;
    ++chunk_.non_blank_lines;
    size_t mark = chunk_.references.size();
    std::string_view problem = parser_.parse(line, record_, chunk_.references);
    if (problem.empty()) problem = add(mark);
    if (!problem.empty()) {
      chunk_.references.resize(mark);
      if (chunk_.bad_line_count++ < Heap::kMaxBadLinesKept) {
        chunk_.bad_lines.push_back({line.number, std::string(problem)});
      }
    }
  }

 private:
  std::string_view add(size_t mark) {
    switch (record_.kind) {
      case DumpRecord::Kind::kRoot:
        chunk_.roots.push_back({chunk_.strings.intern(record_.root_kind),
                                {chunk_.references.begin() + static_cast<ptrdiff_t>(mark),
                                 chunk_.references.end()}});
        chunk_.references.resize(mark);
        return {};
      case DumpRecord::Kind::kShape:
        ++chunk_.shape_count;
        chunk_.shape_memsize += record_.memsize;
        chunk_.references.resize(mark);
        return {};
      case DumpRecord::Kind::kObject:
        break;
    }
    if (chunk_.references.size() - mark > std::numeric_limits<uint32_t>::max()) {
      return "too many references on one line";
    }
    ObjectType type = parse_object_type(record_.type);
    if (!record_.name.empty() && (type == ObjectType::kClass || type == ObjectType::kModule)) {
      chunk_.class_names.emplace_back(static_cast<uint32_t>(chunk_.address.size()),
                                      chunk_.strings.intern(record_.name));
    }
    chunk_.address.push_back(record_.address);
    chunk_.type.push_back(type);
    chunk_.flags.push_back(record_.flags);
    chunk_.class_address.push_back(record_.class_address);
    chunk_.memsize.push_back(record_.memsize);
    chunk_.site.push_back(site_of(record_.file, record_.line));
    chunk_.generation.push_back(record_.generation);
    chunk_.slot_size.push_back(record_.slot_size);
    chunk_.detail.push_back(chunk_.strings.intern(record_.detail));
    chunk_.ref_count.push_back(static_cast<uint32_t>(chunk_.references.size() - mark));
    return {};
  }

  uint32_t site_of(std::string_view file, uint32_t line) {
    if (file.empty()) return 0;
    // Objects from one loop are often neighbours in the dump: remember the last file.
    if (file != last_file_) {
      last_file_.assign(file);
      last_file_id_ = chunk_.strings.intern(file);
    }
    uint64_t key = (uint64_t{last_file_id_} << 32) | line;
    auto [it, inserted] = site_ids_.try_emplace(key, static_cast<uint32_t>(chunk_.sites.size()));
    if (inserted) chunk_.sites.emplace_back(last_file_id_, line);
    return it->second;
  }

  ParsedChunk& chunk_;
  RecordParser parser_;
  DumpRecord record_;
  std::string last_file_;
  uint32_t last_file_id_ = 0;
  std::unordered_map<uint64_t, uint32_t> site_ids_;
};

}  // namespace

void ParsedChunk::clear() {
  address.clear();
  type.clear();
  flags.clear();
  class_address.clear();
  memsize.clear();
  site.clear();
  generation.clear();
  slot_size.clear();
  detail.clear();
  ref_count.clear();
  references.clear();
  strings = StringPool();
  sites.resize(1);
  class_names.clear();
  roots.clear();
  shape_count = shape_memsize = lines = non_blank_lines = bad_line_count = 0;
  bad_lines.clear();
}

void parse_chunk(const char* data, size_t size, size_t capacity, ParsedChunk& out) {
  ChunkBuilder builder(out);
  Line line;
  size_t offset = 0;
  uint64_t number = 0;
  while (offset < size) {
    const void* newline = std::memchr(data + offset, '\n', size - offset);
    size_t end = newline ? static_cast<size_t>(static_cast<const char*>(newline) - data) : size;
    line.data = data + offset;
    line.size = end - offset;
    if (line.size > 0 && line.data[line.size - 1] == '\r') --line.size;
    line.capacity = capacity - offset;
    line.number = ++number;
    builder.line(line);
    offset = end + 1;
  }
}

}  // namespace memprof::heap
