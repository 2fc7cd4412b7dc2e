#include "heap/chunk_parser.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "heap/line.h"
#include "heap/record_parser.h"

namespace memprof::heap {
namespace {

bool blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// For a line that could not be parsed: the root kind when it is a ROOT line ("vm", or "?" when
// its "root" field cannot be found), else nullopt. A plain text search: the line is not JSON.
std::optional<std::string> root_line_kind(std::string_view line) {
  if (line.find(R"("type":"ROOT")") == std::string_view::npos) return std::nullopt;
  constexpr std::string_view kRoot = R"("root":")";
  size_t at = line.find(kRoot);
  if (at == std::string_view::npos) return "?";
  std::string_view rest = line.substr(at + kRoot.size());
  return std::string(rest.substr(0, std::min<size_t>(rest.find('"'), 40)));
}

void keep_capped(std::vector<BadLine>& list, uint64_t& count, BadLine line) {
  if (count++ < Heap::kMaxBadLinesKept) list.push_back(std::move(line));
}

}  // namespace

class ChunkParser::Builder {
 public:
  explicit Builder(ParsedChunk& chunk) : chunk_(chunk) {}

  void line(const Line& line) {
    ++chunk_.lines;
    if (line.size == 0 || blank({line.data, line.size})) return;
    ++chunk_.non_blank_lines;
    size_t mark = chunk_.references.size();
    std::string_view problem = parser_.parse(line, record_, chunk_.references);
    if (problem.empty()) problem = add(mark);
    chunk_.last_line_skipped = !problem.empty();
    if (!problem.empty()) {
      chunk_.references.resize(mark);
      BadLine bad{line.number, std::string(problem)};
      if (auto kind = root_line_kind({line.data, line.size})) {
        ++chunk_.lost_root_lines;
        bad.consequence = fmt::format(
            "ROOT line \"{}\" skipped: the objects it references lose this root; reachability "
            "and retained sizes are incomplete", *kind);
      }
      keep_capped(chunk_.bad_lines, chunk_.bad_line_count, std::move(bad));
      return;
    }
    for (const SkippedValue& value : parser_.skipped_values()) skipped_value(line.number, value, mark);
  }

  // Called after the last line.
  void finish() { chunk_.non_utf8_lines = parser_.repaired_lines(); }

 private:
  // A value left out of a kept line: says which line, which value and what the rest kept.
  void skipped_value(uint64_t line_number, const SkippedValue& value, size_t references_mark) {
    std::string where = record_.kind == DumpRecord::Kind::kRoot
                            ? fmt::format("ROOT \"{}\"", record_.root_kind)
                            : fmt::format("object {:#x}", record_.address);
    std::string consequence = "value skipped";
    if (record_.kind == DumpRecord::Kind::kRoot) {
      const size_t kept = chunk_.roots.back().references.size();
      consequence += fmt::format("; the root's other {} reference{} kept", kept, kept == 1 ? " is" : "s are");
    } else if (value.field.starts_with("references[")) {
      const size_t kept = chunk_.references.size() - references_mark;
      consequence += fmt::format("; the object's other {} reference{} kept", kept, kept == 1 ? " is" : "s are");
    }
    keep_capped(chunk_.bad_values, chunk_.bad_value_count,
                {line_number, fmt::format("{}: {} {} {}", where, value.field, value.text, value.reason),
                 std::move(consequence)});
  }

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
      case DumpRecord::Kind::kFreeSlot:
        ++chunk_.free_slot_count;
        chunk_.references.resize(mark);
        return {};
      case DumpRecord::Kind::kObject:
        break;
    }
    if (chunk_.references.size() - mark > std::numeric_limits<uint32_t>::max()) {
      return "too many references on one line";
    }
    ObjectType type = parse_object_type(record_.type);
    if (type == ObjectType::kClass || type == ObjectType::kModule) {
      const auto index = static_cast<uint32_t>(chunk_.address.size());
      if (!record_.name.empty()) chunk_.class_names.emplace_back(index, chunk_.strings.intern(record_.name));
      if (!record_.real_class_name.empty()) {
        chunk_.real_class_names.emplace_back(index, chunk_.strings.intern(record_.real_class_name));
      }
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
    if (record_.has_value && type == ObjectType::kString) add_value(chunk_.string_values);
    if (record_.has_value && type == ObjectType::kSymbol) add_value(chunk_.symbol_values);
    return {};
  }

  // The value of the object just added.
  void add_value(std::vector<StringValue>& values) {
    StringValue& value = values.emplace_back();
    value.id = static_cast<ObjectId>(chunk_.address.size() - 1);
    value.length = static_cast<uint32_t>(std::min<size_t>(record_.value.size(), UINT32_MAX));
    value.hash = std::hash<std::string_view>()(record_.value);
    std::copy_n(record_.value.data(), std::min(record_.value.size(), StringValue::kHeadSize), value.head.data());
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
  string_values.clear();
  symbol_values.clear();
  strings = StringPool();
  sites.resize(1);
  class_names.clear();
  real_class_names.clear();
  roots.clear();
  shape_count = shape_memsize = free_slot_count = lines = non_blank_lines = bad_line_count = 0;
  last_line_skipped = false;
  lost_root_lines = bad_value_count = non_utf8_lines = 0;
  bad_lines.clear();
  bad_values.clear();
}

ChunkParser::ChunkParser(ParsedChunk& out, bool file_start)
    : builder_(std::make_unique<Builder>(out)), at_file_start_(file_start) {}

ChunkParser::~ChunkParser() = default;

void ChunkParser::parse(const char* data, size_t size, size_t capacity) {
  size_t offset = 0;
  if (at_file_start_) {
    at_file_start_ = false;
    if (std::string_view(data, size).starts_with(kByteOrderMark)) offset = kByteOrderMark.size();
  }
  Line line;
  while (offset < size) {
    const void* newline = std::memchr(data + offset, '\n', size - offset);
    size_t end = newline ? static_cast<size_t>(static_cast<const char*>(newline) - data) : size;
    line.data = data + offset;
    line.size = end - offset;
    if (line.size > 0 && line.data[line.size - 1] == '\r') --line.size;
    line.capacity = capacity - offset;
    line.number = ++line_number_;
    builder_->line(line);
    offset = end + 1;
  }
}

void ChunkParser::finish() { builder_->finish(); }

void parse_chunk(const char* data, size_t size, size_t capacity, bool file_start, ParsedChunk& out) {
  ChunkParser parser(out, file_start);
  parser.parse(data, size, capacity);
  parser.finish();
}

}  // namespace memprof::heap
