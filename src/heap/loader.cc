#include "heap/loader.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <utility>

#include "heap/byte_source.h"
#include "heap/line_reader.h"
#include "heap/record_parser.h"

namespace memprof::heap {
namespace {

bool blank(const Line& line) {
  for (size_t i = 0; i < line.size; ++i) {
    char c = line.data[i];
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

// Reads records into a Heap whose references are still raw addresses, then resolves them to
// ids once every object is known (a reference may point forward in the file).
class Loader {
 public:
  Loader(std::string name, const LoadOptions& options) : name_(std::move(name)), options_(options) {
    heap_.sites.emplace_back();
  }

  Result<Heap> run(ByteSource& source, size_t chunk_size) {
    LineReader lines(source, chunk_size);
    Line line;
    DumpRecord record;
    for (;;) {
      MEMPROF_TRY(more, lines.next(line));
      if (!more) break;
      heap_.lines = line.number;
      if (line.size == 0 || blank(line)) continue;
      ++non_blank_lines_;
      size_t mark = raw_references_.size();
      std::string_view problem = parser_.parse(line, record, raw_references_);
      if (problem.empty()) problem = add(record, mark);
      if (problem.empty() && !seen_record_) first_record();
      if (!problem.empty()) {
        raw_references_.resize(mark);
        bad_line(line.number, problem);
      }
    }
    heap_.input_bytes = lines.bytes_read();
    if (non_blank_lines_ == 0) return err("{}: empty file", name_);
    if (heap_.size() == 0 && heap_.roots.empty() && heap_.shape_count == 0) {
      return err("{}: not a heap dump (line {}: {})", name_, first_bad_line_, first_problem_);
    }
    resolve();
    return std::move(heap_);
  }

 private:
  std::string_view add(const DumpRecord& record, size_t mark) {
    switch (record.kind) {
      case DumpRecord::Kind::kRoot: {
        raw_roots_.push_back({heap_.strings.intern(record.root_kind),
                              {raw_references_.begin() + static_cast<ptrdiff_t>(mark),
                               raw_references_.end()}});
        raw_references_.resize(mark);
        return {};
      }
      case DumpRecord::Kind::kShape:
        ++heap_.shape_count;
        heap_.shape_memsize += record.memsize;
        raw_references_.resize(mark);
        return {};
      case DumpRecord::Kind::kObject:
        break;
    }
    if (heap_.size() >= std::numeric_limits<ObjectId>::max() - 1 ||
        raw_references_.size() > std::numeric_limits<uint32_t>::max()) {
      return "too many objects or references for one dump";
    }
    auto id = static_cast<ObjectId>(heap_.size());
    ObjectType type = type_of(record.type);
    heap_.address.push_back(record.address);
    heap_.type.push_back(type);
    heap_.flags.push_back(record.flags);
    raw_classes_.push_back(record.class_address);
    heap_.memsize.push_back(record.memsize);
    heap_.site.push_back(site_of(record.file, record.line));
    heap_.generation.push_back(record.generation);
    heap_.slot_size.push_back(record.slot_size);
    heap_.detail.push_back(record.detail.empty() ? 0 : heap_.strings.intern(record.detail));
    heap_.ref_begin.push_back(static_cast<uint32_t>(mark));
    if (!record.name.empty() && (type == ObjectType::kClass || type == ObjectType::kModule)) {
      heap_.class_names.emplace(id, heap_.strings.intern(record.name));
    }
    return {};
  }

  ObjectType type_of(std::string_view name) {
    // Few distinct spellings: remember the last one (runs of equal types are common).
    if (name == last_type_name_) return last_type_;
    last_type_name_.assign(name);
    last_type_ = parse_object_type(name);
    return last_type_;
  }

  SiteId site_of(std::string_view file, uint32_t line) {
    if (file.empty()) return 0;
    if (file != last_file_name_) {
      last_file_name_.assign(file);
      last_file_ = heap_.strings.intern(file);
    }
    uint64_t key = (uint64_t{last_file_} << 32) | line;
    auto [it, inserted] = site_ids_.try_emplace(key, static_cast<SiteId>(heap_.sites.size()));
    if (inserted) heap_.sites.push_back({last_file_, line});
    return it->second;
  }

  void bad_line(uint64_t number, std::string_view problem) {
    if (heap_.bad_line_count++ == 0) {
      first_bad_line_ = number;
      first_problem_ = problem;
    }
    if (heap_.bad_lines.size() < Heap::kMaxBadLinesKept) {
      heap_.bad_lines.push_back({number, std::string(problem)});
      // Until a line turns out to be a dump record, the input may not be a dump at all: then
      // the caller prints one error, not one warning per line.
      if (seen_record_) warn(heap_.bad_lines.back());
    }
  }

  void first_record() {
    seen_record_ = true;
    for (const BadLine& line : heap_.bad_lines) warn(line);
  }

  void warn(const BadLine& line) {
    if (options_.warnings == nullptr) return;
    if (warned_ < kMaxWarnings) {
      fmt::print(options_.warnings, "memprof: {}:{}: {} (line skipped)\n", name_, line.line_number,
                 line.message);
    } else if (warned_ == kMaxWarnings) {
      fmt::print(options_.warnings, "memprof: {}: more bad lines skipped, not shown\n", name_);
    }
    ++warned_;
  }

  // Addresses -> ids: classes, references (dangling ones dropped, ref_begin rewritten) and roots.
  void resolve() {
    heap_.duplicate_addresses = heap_.build_index();
    heap_.class_of.resize(heap_.size());
    for (ObjectId id = 0; id < heap_.size(); ++id) heap_.class_of[id] = heap_.find(raw_classes_[id]);
    std::vector<uint64_t>().swap(raw_classes_);

    heap_.ref_begin.push_back(static_cast<uint32_t>(raw_references_.size()));
    heap_.ref_targets.resize(raw_references_.size());
    uint32_t out = 0;
    for (ObjectId id = 0; id < heap_.size(); ++id) {
      uint32_t begin = heap_.ref_begin[id];
      uint32_t end = heap_.ref_begin[id + 1];
      heap_.ref_begin[id] = out;
      for (uint32_t i = begin; i < end; ++i) {
        ObjectId target = heap_.find(raw_references_[i]);
        if (target == kNoObject) {
          ++heap_.dangling_references;
        } else {
          heap_.ref_targets[out++] = target;
        }
      }
    }
    heap_.ref_begin[heap_.size()] = out;
    heap_.ref_targets.resize(out);
    heap_.ref_targets.shrink_to_fit();
    std::vector<uint64_t>().swap(raw_references_);

    for (auto& [kind, addresses] : raw_roots_) {
      RootSet root{kind, {}};
      root.targets.reserve(addresses.size());
      for (uint64_t address : addresses) {
        ObjectId target = heap_.find(address);
        if (target == kNoObject) {
          ++heap_.dangling_references;
        } else {
          root.targets.push_back(target);
        }
      }
      heap_.roots.push_back(std::move(root));
    }
  }

  std::string name_;
  const LoadOptions& options_;
  Heap heap_;
  RecordParser parser_;
  std::vector<uint64_t> raw_references_;
  std::vector<uint64_t> raw_classes_;
  std::vector<std::pair<StringId, std::vector<uint64_t>>> raw_roots_;
  std::unordered_map<uint64_t, SiteId> site_ids_;
  std::string last_type_name_;
  ObjectType last_type_ = ObjectType::kUnknown;
  std::string last_file_name_;
  StringId last_file_ = 0;
  uint64_t non_blank_lines_ = 0;
  bool seen_record_ = false;
  static constexpr uint64_t kMaxWarnings = 20;
  uint64_t warned_ = 0;
  uint64_t first_bad_line_ = 0;
  std::string_view first_problem_;
};

}  // namespace

Result<Heap> load_heap(const std::string& path, const LoadOptions& options) {
  MEMPROF_TRY(source, open_file_source(path));
  return Loader(path, options).run(*source, size_t{1} << 20);
}

Result<Heap> load_heap_from_bytes(std::span<const unsigned char> bytes, const std::string& name,
                                  const LoadOptions& options) {
  MEMPROF_TRY(source, open_memory_source(bytes, name));
  // The line buffer grows for longer lines; small inputs start small.
  return Loader(name, options).run(*source, std::clamp<size_t>(bytes.size() * 2, 4096, size_t{1} << 20));
}

}  // namespace memprof::heap
