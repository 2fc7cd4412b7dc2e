#include "heap/loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <limits>
#include <unordered_map>
#include <utility>

#include "heap/block_pipeline.h"
#include "heap/block_reader.h"
#include "heap/byte_source.h"
#include "heap/chunk_parser.h"
#include "heap/file_blocks.h"
#include "heap/run_async.h"
#include "heap/units.h"
#include "core/util/scoped_fd.h"

namespace memprof::heap {
namespace {

// Reads blocks of lines, parses them on worker threads, and merges the results into a Heap in
// file order; references stay raw addresses until every object is known (a reference may point
// forward in the file), then resolve() turns them into ids.
class Loader {
 public:
  Loader(std::string name, const LoadOptions& options) : name_(std::move(name)), options_(options) {
    heap_.sites.emplace_back();
  }

  // Streams `source` (compressed, a pipe, bytes in memory): the main thread reads blocks of
  // lines in order and the workers parse them. `expected_bytes`: the input size when known (0
  // otherwise): reserving for the objects such a file holds saves the copies of growing arrays;
  // reserved but unused pages cost no memory.
  Result<Heap> run(ByteSource& source, size_t block_size, uint64_t expected_bytes) {
    expected_bytes_ = expected_bytes;
    BlockReader reader(source, block_size, name_);
    MEMPROF_TRY_STATUS(run_block_pipeline(
        [&](Block& block, bool& last) -> Result<bool> {
          MEMPROF_TRY(more, reader.next(block.bytes, block.size));
          last = reader.at_end();
          return more;
        },
        [](Block& block) {  // the main thread read the block
          parse_chunk(block.bytes.data(), block.size, block.bytes.size(), block.file_start, block.parsed);
          return ok_status();
        },
        std::bind_front(&Loader::merge, this)));
    heap_.input_bytes = reader.bytes_read();
    ignored_trailing_bytes_ = source.ignored_trailing_bytes();
    heap_.cut_short = source.cut_short();
    ends_mid_line_ = reader.ends_mid_line();
    return finish();
  }

  // A plain regular file: each worker reads (pread) and parses its own block, so the copying
  // out of the page cache happens on all cores too (file_blocks.h).
  Result<Heap> run_file(int fd, uint64_t file_size, uint64_t block_size) {
    expected_bytes_ = file_size;
    uint64_t next = 0;
    MEMPROF_TRY_STATUS(run_block_pipeline(
        [&](Block& block, bool& last) -> Result<bool> {
          if (next >= file_size) return false;
          block.begin = next;
          next += block_size;
          last = next >= file_size;
          return true;
        },
        [this, fd, file_size, block_size](Block& block) {
          ChunkParser parser(block.parsed, block.file_start);
          Status status = parse_file_block(fd, file_size, block.begin, block.begin + block_size,
                                           name_, block.bytes, parser);
          parser.finish();
          return status;
        },
        std::bind_front(&Loader::merge, this)));
    heap_.input_bytes = file_size;
    char last = '\n';
    ends_mid_line_ = file_size > 0 && ::pread(fd, &last, 1, static_cast<off_t>(file_size - 1)) == 1 && last != '\n';
    return finish();
  }

 private:
  Result<Heap> finish() {
    if (non_blank_lines_ == 0) return err("{}: empty file", name_);
    if (!seen_record_) {
      return err("{}: not a heap dump (line {}: {})", name_, heap_.bad_lines.front().line_number,
                 heap_.bad_lines.front().message);
    }
    if (heap_.size() == 0) {
      return err("{}: no objects in the dump ({} ROOT line{}, {} SHAPE line{}, {} line{} skipped)",
                 name_, count_text(raw_roots_.size()), raw_roots_.size() == 1 ? "" : "s",
                 count_text(heap_.shape_count), heap_.shape_count == 1 ? "" : "s", count_text(heap_.bad_line_count),
                 heap_.bad_line_count == 1 ? "" : "s");
    }
    // Ruby ends every line with '\n': a last line without one that does not parse was cut.
    if (heap_.cut_short.empty() && ends_mid_line_ && last_line_skipped_)
      heap_.cut_short = "cut off in the middle of a line";
    resolve();
    summarize();
    return std::move(heap_);
  }

  // What the per-line warnings do not show: problems found across the whole dump.
  void summarize() {
    if (options_.warnings == nullptr) return;
    if (!heap_.cut_short.empty())
      fmt::print(options_.warnings, "memprof: warning: {}: {} after {} of the dump: what came before is read, "
                 "the rest is missing (objects, references, roots)\n",
                 name_, heap_.cut_short, byte_count_text(heap_.input_bytes));
    auto warn_count = [&](uint64_t count, std::string_view one, std::string_view many,
                          std::string_view consequence) {
      if (count == 0) return;
      fmt::print(options_.warnings, "memprof: warning: {}: {} {} ({})\n", name_, count_text(count),
                 count == 1 ? one : many, consequence);
    };
    warn_count(heap_.duplicate_addresses, "object line repeats the address of an earlier one",
               "object lines repeat the address of an earlier one",
               "references go to the first object with the address");
    warn_count(heap_.dangling_references, "reference points to an address no object line has",
               "references point to addresses no object line has",
               "dropped; a truncated or partial dump?");
    warn_count(heap_.non_utf8_lines, "line holds bytes that are not UTF-8",
               "lines hold bytes that are not UTF-8",
               "read with U+FFFD in their place; Ruby writes file names as raw bytes");
    warn_count(heap_.lost_root_lines, "ROOT line could not be read", "ROOT lines could not be read",
               "the objects they reference lose that root; reachability and retained sizes are "
               "incomplete");
    // Ruby writes one "vm" ROOT line per dump: more are dumps written into one file (two
    // processes', or one process's twice), read as one heap without a word before.
    if (const auto vm_roots = std::ranges::count_if(heap_.roots, [&](const RootSet& root) { return heap_.str(root.kind) == "vm"; });
        vm_roots > 1)
      fmt::print(options_.warnings, "memprof: warning: {}: the file holds {} dumps ({} \"vm\" ROOT lines, one per "
                 "dump: concatenated, or written into one file twice); they are read as one heap\n",
                 name_, vm_roots, vm_roots);
    if (ignored_trailing_bytes_ > 0)
      fmt::print(options_.warnings, "memprof: warning: {}: {} after the end of the compressed data ignored "
                 "(not another gzip member: trailing garbage, as gzip -d says)\n",
                 name_, byte_count_text(ignored_trailing_bytes_));
    if (heap_.roots.empty() && heap_.lost_root_lines == 0) {
      fmt::print(options_.warnings,
                 "memprof: warning: {}: the dump has no ROOT lines (ObjectSpace.dump_all(since:) "
                 "writes none): no object is reachable from a root, and retained sizes are 0\n",
                 name_);
    }
  }

  // Called by the first merge, not before the pipeline starts: reserving faults in the arrays'
  // first pages (~0.7 ms on a Rails dump), which would delay the first workers; by the first
  // merge they are parsing.
  void reserve(uint64_t bytes) {
    // Ruby's dump lines average 200-350 bytes, references one per ~250 bytes.
    size_t objects = static_cast<size_t>(std::min<uint64_t>(bytes / 180 + 16, kNoObject));
    size_t references = static_cast<size_t>(std::min<uint64_t>(bytes / 100 + 16, kNoObject));
    heap_.address.reserve(objects);
    heap_.type.reserve(objects);
    heap_.flags.reserve(objects);
    heap_.memsize.reserve(objects);
    heap_.generation.reserve(objects);
    heap_.slot_size.reserve(objects);
    heap_.site.reserve(objects);
    heap_.detail.reserve(objects);
    heap_.ref_begin.reserve(objects + 1);
    raw_classes_.reserve(objects);
    raw_references_.reserve(references);
    heap_.string_values.reserve(objects / 4);  // about a quarter of the objects are Strings
  }

  Status merge(const ParsedChunk& chunk) {
    if (expected_bytes_ > 0) reserve(std::exchange(expected_bytes_, 0));
    const uint64_t line_base = heap_.lines;
    heap_.lines += chunk.lines;
    non_blank_lines_ += chunk.non_blank_lines;
    for (const BadLine& bad : chunk.bad_lines) problem(heap_.bad_lines, line_base, bad);
    heap_.bad_line_count += chunk.bad_line_count;
    heap_.lost_root_lines += chunk.lost_root_lines;
    for (const BadLine& bad : chunk.bad_values) problem(heap_.bad_values, line_base, bad);
    heap_.bad_value_count += chunk.bad_value_count;
    heap_.non_utf8_lines += chunk.non_utf8_lines;
    if (chunk.non_blank_lines > 0) last_line_skipped_ = chunk.last_line_skipped;

    const size_t objects = chunk.address.size();
    if (heap_.size() + objects >= kNoObject ||
        raw_references_.size() + chunk.references.size() > std::numeric_limits<uint32_t>::max()) {
      return err("{}: too many objects or references for one dump (limit 4G each)", name_);
    }
    std::vector<StringId> strings(chunk.strings.size(), 0);
    for (size_t i = 1; i < chunk.strings.size(); ++i) strings[i] = heap_.strings.intern(chunk.strings.view(i));
    std::vector<SiteId> sites(chunk.sites.size(), 0);
    for (size_t i = 1; i < chunk.sites.size(); ++i) {
      sites[i] = global_site(strings[chunk.sites[i].first], chunk.sites[i].second);
    }

    const auto base = static_cast<ObjectId>(heap_.size());
    auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
    append(heap_.address, chunk.address);
    append(heap_.type, chunk.type);
    append(heap_.flags, chunk.flags);
    append(heap_.memsize, chunk.memsize);
    append(heap_.generation, chunk.generation);
    append(heap_.slot_size, chunk.slot_size);
    append(raw_classes_, chunk.class_address);
    auto offset = static_cast<uint32_t>(raw_references_.size());
    for (size_t i = 0; i < objects; ++i) {
      heap_.site.push_back(sites[chunk.site[i]]);
      heap_.detail.push_back(strings[chunk.detail[i]]);
      heap_.ref_begin.push_back(offset);
      offset += chunk.ref_count[i];
    }
    append(raw_references_, chunk.references);
    for (auto [to, from] : {std::pair{&heap_.string_values, &chunk.string_values},
                            std::pair{&heap_.symbol_values, &chunk.symbol_values}}) {
      const size_t before = to->size();
      append(*to, *from);
      for (size_t i = before; i < to->size(); ++i) (*to)[i].id += base;
    }
    for (auto [index, name] : chunk.class_names) heap_.class_names.emplace(base + index, strings[name]);
    for (auto [index, name] : chunk.real_class_names) {
      heap_.real_class_names.emplace(base + index, strings[name]);
    }
    for (const ParsedChunk::Root& root : chunk.roots) raw_roots_.emplace_back(strings[root.kind], root.references);
    heap_.shape_count += chunk.shape_count;
    heap_.shape_memsize += chunk.shape_memsize;
    heap_.free_slot_count += chunk.free_slot_count;
    if (!seen_record_ && (objects > 0 || !chunk.roots.empty() || chunk.shape_count > 0 ||
                          chunk.free_slot_count > 0))
      first_record();
    return ok_status();
  }

  SiteId global_site(StringId file, uint32_t line) {
    uint64_t key = (uint64_t{file} << 32) | line;
    auto [it, inserted] = site_ids_.try_emplace(key, static_cast<SiteId>(heap_.sites.size()));
    if (inserted) heap_.sites.push_back({file, line});
    return it->second;
  }

  // Keeps a bad line or value of a chunk (its number made absolute) and warns about it.
  void problem(std::vector<BadLine>& list, uint64_t line_base, const BadLine& bad) {
    if (list.size() >= Heap::kMaxBadLinesKept) return;
    list.push_back(bad);
    list.back().line_number += line_base;
    // Until a line turns out to be a dump record, the input may not be a dump at all: then
    // the caller prints one error, not one warning per line.
    if (seen_record_) warn(list.back());
  }

  void first_record() {
    seen_record_ = true;
    std::vector<BadLine> earlier = heap_.bad_lines;
    earlier.insert(earlier.end(), heap_.bad_values.begin(), heap_.bad_values.end());
    std::sort(earlier.begin(), earlier.end(),
              [](const BadLine& a, const BadLine& b) { return a.line_number < b.line_number; });
    for (const BadLine& line : earlier) warn(line);
  }

  void warn(const BadLine& line) {
    if (options_.warnings == nullptr) return;
    if (warned_ < kMaxWarnings) {
      fmt::print(options_.warnings, "memprof: {}:{}: {} ({})\n", name_, line.line_number,
                 line.message, line.consequence);
    } else if (warned_ == kMaxWarnings) {
      fmt::print(options_.warnings, "memprof: {}: more bad lines and values skipped, not shown\n",
                 name_);
    }
    ++warned_;
  }

  // Addresses -> ids: classes, references (dangling ones dropped, ref_begin rewritten) and roots.
  void resolve() {
    heap_.duplicate_addresses = heap_.build_index();
    // The lookups (the index is read-only now) go in slices that this thread and a helper take
    // in turn, so that both finish together: fixed halves beside a third thread for the
    // classes left one core idle for 1-7 ms of a Rails dump's ~5.
    heap_.class_of.resize(heap_.size());
    heap_.ref_begin.push_back(static_cast<uint32_t>(raw_references_.size()));
    heap_.ref_targets.resize(raw_references_.size());
    const size_t class_slices = (raw_classes_.size() + kLookupSlice - 1) / kLookupSlice;
    const size_t slices = class_slices + (raw_references_.size() + kLookupSlice - 1) / kLookupSlice;
    std::atomic<size_t> next_slice{0};
    std::atomic<uint64_t> dangling{0};
    auto look_up = [this, class_slices, slices, &next_slice, &dangling] {
      uint64_t missed = 0;
      for (size_t slice; (slice = next_slice.fetch_add(1, std::memory_order_relaxed)) < slices;) {
        if (slice < class_slices) {
          look_up_slice(raw_classes_, heap_.class_of, slice * kLookupSlice);
        } else {
          missed += look_up_slice(raw_references_, heap_.ref_targets, (slice - class_slices) * kLookupSlice);
        }
      }
      dangling.fetch_add(missed, std::memory_order_relaxed);
    };
    Task<void> helper = run_async(look_up);
    look_up();
    helper.get();
    release(raw_classes_);
    release(raw_references_);
    if (dangling.load(std::memory_order_relaxed) > 0) drop_dangling_references();
    resolve_roots();
  }

  // References to addresses no object has (a partial dump's) are dropped, in one linear pass over
  // all of them: a dump without any, most of them, skips it.
  void drop_dangling_references() {
    uint32_t out = 0;
    for (ObjectId id = 0; id < heap_.size(); ++id) {
      uint32_t begin = heap_.ref_begin[id];
      uint32_t end = heap_.ref_begin[id + 1];
      heap_.ref_begin[id] = out;
      for (uint32_t i = begin; i < end; ++i) {
        ObjectId target = heap_.ref_targets[i];
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
  }

  void resolve_roots() {
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

  static constexpr size_t kLookupSlice = 16384;

  // ids[i] = the id of addresses[i], for the kLookupSlice entries from `begin`; returns how many
  // were not found.
  size_t look_up_slice(const BigVector<uint64_t>& addresses, BigVector<ObjectId>& ids, size_t begin) const {
    constexpr size_t kAhead = 16;  // random reads from a table larger than the caches
    const size_t end = std::min(begin + kLookupSlice, addresses.size());
    size_t missing = 0;
    for (size_t i = begin; i < end; ++i) {
      if (i + kAhead < end) heap_.prefetch(addresses[i + kAhead]);
      ids[i] = heap_.find(addresses[i]);
      missing += ids[i] == kNoObject;
    }
    return missing;
  }

  std::string name_;
  const LoadOptions& options_;
  Heap heap_;
  BigVector<uint64_t> raw_references_;
  BigVector<uint64_t> raw_classes_;
  std::vector<std::pair<StringId, std::vector<uint64_t>>> raw_roots_;
  std::unordered_map<uint64_t, SiteId> site_ids_;
  uint64_t expected_bytes_ = 0;  // the input size, until the first merge reserves for it
  uint64_t ignored_trailing_bytes_ = 0;  // after the compressed data (ByteSource)
  bool ends_mid_line_ = false;      // the input's last byte is not a '\n'
  bool last_line_skipped_ = false;  // the last non-blank line did not parse
  uint64_t non_blank_lines_ = 0;
  bool seen_record_ = false;
  static constexpr uint64_t kMaxWarnings = 20;
  uint64_t warned_ = 0;
};

}  // namespace

Result<Heap> load_heap(const std::string& given, const LoadOptions& options) {
  // "-" is standard input, as for most tools (a pipe: the streaming path below), and is
  // called so in messages.
  const bool from_stdin = given == "-";
  const std::string path = from_stdin ? "/dev/stdin" : given;
  const std::string name = dump_display_name(given);
  {
    ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return err("{}: {}", name, std::strerror(errno));
    struct stat info {};
    unsigned char head[4] = {};
    // A regular file of size 0 may still have contents (/proc files): streamed to its end.
    ssize_t n = ::fstat(fd.get(), &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0
                    ? ::pread(fd.get(), head, 4, 0)
                    : -1;
    if (n >= 0 && detect_compression({head, static_cast<size_t>(n)}) == Compression::kNone) {
      ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
      return Loader(name, options).run_file(fd.get(), static_cast<uint64_t>(info.st_size), options.block_size);
    }
  }
  MEMPROF_TRY(source, open_file_source(path, name));
  // Compressed input: the file size says little about the object count; grow as needed.
  uint64_t expected = source->compression() == Compression::kNone ? source->size_hint() : 0;
  return Loader(name, options).run(*source, options.block_size, expected);
}

Result<Heap> load_heap_from_bytes(std::span<const unsigned char> bytes, const std::string& name,
                                  const LoadOptions& options) {
  MEMPROF_TRY(source, open_memory_source(bytes, name));
  // Blocks grow for longer lines; small inputs start small.
  return Loader(name, options).run(*source, std::clamp<size_t>(bytes.size() * 2, 4096, options.block_size), 0);
}

}  // namespace memprof::heap
