#include "heap/record_parser.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "heap/heap.h"
#include "heap/hex_address.h"
#include "heap/raw_file_name.h"
#include "heap/utf8_repair.h"

namespace memprof::heap {

static_assert(kLinePadding == simdjson::SIMDJSON_PADDING);
static_assert(kLinePadding >= 19);  // parse_hex_address reads 19 bytes from a string in the line

namespace {

namespace od = simdjson::ondemand;

// How values are handled here, for GCC's sake (measured with GCC 12 -O2 on 300,000 lines of
// real dumps, one core): simdjson's results and iterators are small structs that GCC builds in
// memory with narrow stores and then copies with one wide load, which cannot be forwarded from
// those stores and stalls the core, once per copy, several times per field (perf annotate put
// a third of parse_object's samples just after one such load). So a field or element is used
// in place (`value_unsafe()` once its error is checked) instead of being copied out of its
// result with get(), and values are passed by reference. The line cost went from 265-285 ns
// to 145-175 ns, as fast as the same file compiled by clang 14.

// An object key as simdjson hands it: a pointer just after its opening quote, into the line,
// which is followed by kLinePadding readable bytes.
struct RawKey {
  const char* text;
};

// A key to look for, as the bytes a dump line holds from the key's first character on: the
// name, its closing quote, then anything. Built at compile time, as two words and their masks.
struct KeyPattern {
  uint64_t word[2] = {};
  uint64_t mask[2] = {};
  template <size_t N>
  consteval KeyPattern(const char (&name)[N]) {  // NOLINT: implicit, for eq<"name">(key)
    static_assert(N <= 16, "keys up to 15 characters");
    for (size_t i = 0; i < N; ++i) {
      const auto byte = static_cast<unsigned char>(i + 1 < N ? name[i] : '"');
      word[i / 8] |= uint64_t{byte} << (8 * (i % 8));
      mask[i / 8] |= uint64_t{0xff} << (8 * (i % 8));
    }
  }
};

// key == Pattern's name, comparing the name and the closing quote at once: no scan for the
// key's length, no call to memcmp (which it is for 3, 5, 6, 7 or more bytes), a few integer
// operations on one or two words (this runs ~16 times per dump line). Reading 16 bytes from
// the key stays within the line's padding. Keys with escapes never match (none of ours has any).
template <KeyPattern Pattern>
inline bool eq(RawKey key) {
  static_assert(16 <= kLinePadding);
  uint64_t first;
  std::memcpy(&first, key.text, 8);
  const uint64_t differs = (first ^ Pattern.word[0]) & Pattern.mask[0];
  if constexpr (Pattern.mask[1] == 0) {
    return differs == 0;
  } else {
    uint64_t second;
    std::memcpy(&second, key.text + 8, 8);
    return (differs | ((second ^ Pattern.word[1]) & Pattern.mask[1])) == 0;
  }
}

// The key's text: dump keys hold no escapes, so it ends at the next quote.
std::string_view key_name(RawKey key) {
  return {key.text, static_cast<size_t>(std::strchr(key.text, '"') - key.text)};
}

uint16_t flag_bit(RawKey key) {
  if (eq<"wb_protected">(key)) return kFlagWbProtected;
  if (eq<"old">(key)) return kFlagOld;
  if (eq<"uncollectible">(key)) return kFlagUncollectible;
  if (eq<"marked">(key)) return kFlagMarked;
  if (eq<"marking">(key)) return kFlagMarking;
  if (eq<"pinned">(key)) return kFlagPinned;
  return 0;
}

uint16_t top_level_flag_bit(RawKey key) {
  if (eq<"frozen">(key)) return kFlagFrozen;
  if (eq<"embedded">(key)) return kFlagEmbedded;
  if (eq<"shared">(key)) return kFlagShared;
  if (eq<"fstring">(key)) return kFlagFstring;
  if (eq<"singleton">(key)) return kFlagSingleton;
  if (eq<"chilled">(key)) return kFlagChilled;
  if (eq<"memprof_own">(key)) return kFlagMemprofOwn;
  return 0;
}

// Reasons for skipped lines and values. Static storage: they outlive the parse call.
constexpr std::string_view kInvalidJson = "invalid JSON";
constexpr std::string_view kNotAnObject = "not a JSON object";
constexpr std::string_view kMissingAddress = "missing address";
constexpr std::string_view kBadAddress = "address is not a hex string";
constexpr std::string_view kNotAnAddress = "is not an address";
constexpr std::string_view kNotAnArray = "is not an array";
constexpr std::string_view kBadNumber = "is not a non-negative integer";
constexpr std::string_view kBadString = "is not a string";
constexpr std::string_view kNotABoolean = "is not a boolean";
constexpr std::string_view kNotAnObjectValue = "is not an object";
constexpr std::string_view kImpossibleMemsize = "is larger than a process's address space";

// No object is larger than the 128 TB of a process's address space: a memsize above that is a
// corrupt value, and two of them would wrap every total.
constexpr uint64_t kLargestMemsize = uint64_t{1} << 47;

// simdjson errors that mean the value was of another kind than asked: the document is still
// well-formed and the value can be skipped. Any other error means the line is not JSON.
bool wrong_kind(simdjson::error_code error) {
  return error == simdjson::INCORRECT_TYPE || error == simdjson::NUMBER_ERROR ||
         error == simdjson::NUMBER_OUT_OF_RANGE ||
         error == simdjson::STRING_ERROR;
}

// Records a skipped value with its text as written (cut: a value may be megabytes long).
// Returns kInvalidJson when the error was not about the value's kind but about the JSON.
std::string_view skip_value(od::value& value, simdjson::error_code error, std::string field,
                            std::string_view reason, std::vector<SkippedValue>& skipped) {
  if (!wrong_kind(error)) return kInvalidJson;
  std::string_view token = value.raw_json_token();
  constexpr size_t kShown = 40;
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  std::string text(token.substr(0, kShown));
  if (token.size() > kShown) text += "...";
  skipped.push_back({std::move(field), std::move(text), reason});
  return {};
}

// frozen, embedded, shared, fstring, singleton, chilled, memprof_own: booleans at the top level.
// A value of another type is ignored (informational fields must not cost the whole line).
void read_top_level_flag(od::value& value, RawKey key, uint16_t& flags) {
  uint16_t bit = top_level_flag_bit(key);
  bool set = false;
  if (bit != 0 && value.get_bool().get(set) == simdjson::SUCCESS && set) flags |= bit;
}

std::string_view read_references(od::value& value, std::vector<uint64_t>& references,
                                 std::vector<SkippedValue>& skipped) {
  od::array array;
  if (auto error = value.get_array().get(array)) {
    return skip_value(value, error, "references", kNotAnArray, skipped);
  }
  size_t index = 0;
  for (auto element : array) {
    if (element.error()) return kInvalidJson;
    od::value& item = element.value_unsafe();
    od::raw_json_string raw;
    auto error = item.get_raw_json_string().get(raw);
    uint64_t address = error ? 0 : parse_hex_address(raw.raw());
    if (address != 0) {
      references.push_back(address);
    } else if (std::string_view problem = skip_value(item, error ? error : simdjson::INCORRECT_TYPE,
                                                     fmt::format("references[{}]", index),
                                                     kNotAnAddress, skipped);
               !problem.empty()) {
      return problem;
    }
    ++index;
  }
  return {};
}

std::string_view read_flags(od::value& value, uint16_t& flags, std::vector<SkippedValue>& skipped) {
  od::object object;
  if (auto error = value.get_object().get(object)) {
    return skip_value(value, error, "flags", kNotAnObjectValue, skipped);
  }
  for (auto field_result : object) {
    if (field_result.error()) return kInvalidJson;
    od::field& field = field_result.value_unsafe();
    od::raw_json_string key = field.key();
    od::value& flag = field.value();
    bool set = false;
    if (auto error = flag.get_bool().get(set)) {
      std::string_view problem =
          skip_value(flag, error, fmt::format("flags.{}", key_name(RawKey{key.raw()})), kNotABoolean, skipped);
      if (!problem.empty()) return problem;
      continue;
    }
    if (set) flags |= flag_bit(RawKey{key.raw()});
  }
  return {};
}

template <typename T>
std::string_view read_uint(od::value& value, std::string_view field, T& out,
                           std::vector<SkippedValue>& skipped) {
  uint64_t number = 0;
  if (auto error = value.get_uint64().get(number)) {
    return skip_value(value, error, std::string(field), kBadNumber, skipped);
  }
  out = number > std::numeric_limits<T>::max() ? std::numeric_limits<T>::max()
                                                : static_cast<T>(number);
  return {};
}

std::string_view read_memsize(od::value& value, uint64_t& out, std::vector<SkippedValue>& skipped) {
  uint64_t number = 0;
  if (std::string_view problem = read_uint(value, "memsize", number, skipped); !problem.empty()) return problem;
  if (number > kLargestMemsize) {
    // A well-formed number: skipped as a value of the wrong kind is.
    return skip_value(value, simdjson::NUMBER_OUT_OF_RANGE, "memsize", kImpossibleMemsize, skipped);
  }
  out = number;
  return {};
}

std::string_view read_string(od::value& value, std::string_view field, std::string_view& out,
                             std::vector<SkippedValue>& skipped) {
  if (auto error = value.get_string().get(out)) {
    return skip_value(value, error, std::string(field), kBadString, skipped);
  }
  return {};
}

// simdjson answers INCORRECT_TYPE for anything that does not start with '{', garbage included:
// call it "not a JSON object" only when it is some other JSON value.
std::string_view not_object_reason(const Line& line) {
  std::string_view text(line.data, line.size);
  size_t first = text.find_first_not_of(" \t");
  size_t last = text.find_last_not_of(" \t");
  if (first == std::string_view::npos) return kInvalidJson;
  text = text.substr(first, last - first + 1);
  char c = text[0];
  bool value = c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9') || text == "true" ||
               text == "false" || text == "null";
  return value ? kNotAnObject : kInvalidJson;
}

}  // namespace

uint64_t parse_address_text(std::string_view text) {
  // The dump reader's parser, on a copy laid out as it expects: the text, then a closing quote
  // (so a quote inside the text would end it early). It reads 19 bytes; 18 characters is "0x"
  // and 16 digits.
  if (text.size() > 18 || text.find('"') != std::string_view::npos) return 0;
  char quoted[20] = {};
  std::memcpy(quoted, text.data(), text.size());
  quoted[text.size()] = '"';
  return parse_hex_address(quoted);
}

namespace {

// Lines longer than this are checked for a huge String value before simdjson sees them.
constexpr size_t kHugeLine = size_t{1} << 20;

// The bytes of the "value" string of a line (between its quotes), or npos. The key's quotes
// and colon cannot occur unescaped inside a JSON string, so the first match is the key.
std::pair<size_t, size_t> find_value(std::string_view line) {
  constexpr std::string_view kKey = R"("value":")";
  const size_t key = line.find(kKey);
  if (key == std::string_view::npos) return {std::string_view::npos, 0};
  const size_t begin = key + kKey.size();
  for (size_t end = line.find('"', begin); end != std::string_view::npos; end = line.find('"', end + 1)) {
    size_t backslashes = 0;
    while (end - backslashes > begin && line[end - backslashes - 1] == '\\') ++backslashes;
    if (backslashes % 2 == 0) return {begin, end};
  }
  return {std::string_view::npos, 0};
}

}  // namespace

// A String of 100 MB is one 100 MB line: simdjson would index every byte of it (4 bytes of
// structural index per input byte). The value is cut out and the rest of the line parsed; the
// value itself is only hashed (duplicate strings) and its head kept, from the line as it is.
std::string_view RecordParser::parse_huge(const Line& line, DumpRecord& record,
                                          std::vector<uint64_t>& references) {
  const std::string_view text(line.data, line.size);
  const auto [begin, end] = find_value(text);
  if (begin == std::string_view::npos || end - begin < kHugeLine / 2) {
    return parse_object(line, record, references);
  }
  shortened_.assign(text.substr(0, begin));
  shortened_.append(text.substr(end));
  const size_t size = shortened_.size();
  shortened_.append(kLinePadding, '\0');
  std::string_view problem = parse_object({shortened_.data(), size, shortened_.size(), line.number}, record, references);
  if (problem.empty()) {
    record.value = text.substr(begin, end - begin);
    record.has_value = true;
  }
  // The copy's capacity would stay as large as the line: give it back.
  std::string().swap(shortened_);
  return problem;
}

std::string_view RecordParser::parse(const Line& line, DumpRecord& record,
                                     std::vector<uint64_t>& references) {
  skipped_.clear();
  const size_t mark = references.size();
  std::string_view problem = line.size > kHugeLine ? parse_huge(line, record, references)
                                                   : parse_object(line, record, references);
  if (problem != kInvalidJson) return problem;
  // Ruby writes file names as their raw bytes: a quote or backslash in one (raw_file_name.h),
  // or bytes that are not UTF-8. Such a line is parsed as a repaired copy (rare, so a copy is
  // fine), whose string views point into repaired_, which lives until the next call.
  std::string_view text(line.data, line.size);
  const bool escaped = escape_raw_file_name(text, escaped_);
  if (escaped) text = escaped_;
  const bool utf8 = simdjson::validate_utf8(text.data(), text.size());
  if (!escaped && utf8) return problem;
  skipped_.clear();
  references.resize(mark);
  repaired_.clear();
  if (utf8) {
    repaired_.assign(text);
  } else {
    append_repaired_utf8(text, repaired_);
    ++repaired_lines_;
  }
  const size_t size = repaired_.size();
  repaired_.append(kLinePadding, '\0');
  return parse_object({repaired_.data(), size, repaired_.size(), line.number}, record, references);
}

std::string_view RecordParser::parse_object(const Line& given, DumpRecord& record,
                                            std::vector<uint64_t>& references) {
  // Copied from a constant: `record = DumpRecord{}` zeroes a temporary with `rep stos` (slow to
  // start for 168 bytes) and copies it, ~8% of a line's parse.
  static constexpr DumpRecord kEmpty{};
  record = kEmpty;
  Line line = given;
  if (line.capacity < line.size + kLinePadding) {
    // A caller may give a line without kLinePadding readable bytes after it (ChunkParser's
    // contract allows it): simdjson gets a padded copy.
    padded_.assign(line.data, line.size);
    padded_.append(kLinePadding, '\0');
    line = {padded_.data(), line.size, padded_.size(), line.number};
  }
  od::document document;
  if (parser_.iterate(simdjson::padded_string_view(line.data, line.size, line.capacity))
          .get(document)) {
    return kInvalidJson;
  }
  od::object object;
  auto object_error = document.get_object().get(object);
  if (object_error == simdjson::INCORRECT_TYPE) return not_object_reason(line);
  if (object_error) return kInvalidJson;

  bool address_seen = false;
  std::string_view problem;
  for (auto field_result : object) {
    if (field_result.error()) return kInvalidJson;
    od::field& field = field_result.value_unsafe();
    RawKey key{field.key().raw()};
    od::value& value = field.value();
    // Dispatch on the first letter: the hot fields (address, type, class, references,
    // memsize, flags) are decided by one or two comparisons.
    switch (key.text[0]) {
      case 'a':
        if (eq<"address">(key)) {
          address_seen = true;
          od::raw_json_string text;
          if (value.get_raw_json_string().get(text)) return kBadAddress;
          record.address = parse_hex_address(text.raw());
          if (record.address == 0) return kBadAddress;
        }
        break;
      case 't':
        if (eq<"type">(key)) problem = read_string(value, "type", record.type, skipped_);
        break;
      case 'c':
        if (eq<"class">(key)) {
          od::raw_json_string text;
          // A class that is not an address (never written by Ruby) is ignored, not fatal.
          if (value.get_raw_json_string().get(text) == simdjson::SUCCESS) {
            record.class_address = parse_hex_address(text.raw());
          }
        } else {
          read_top_level_flag(value, key, record.flags);
        }
        break;
      case 'r':
        if (eq<"references">(key)) {
          problem = read_references(value, references, skipped_);
        } else if (eq<"root">(key)) {
          problem = read_string(value, "root", record.root_kind, skipped_);
        } else if (eq<"real_class_name">(key)) {
          problem = read_string(value, "real_class_name", record.real_class_name, skipped_);
        }
        break;
      case 'm':
        if (eq<"memsize">(key)) {
          problem = read_memsize(value, record.memsize, skipped_);
        } else {
          read_top_level_flag(value, key, record.flags);
        }
        break;
      case 'f':
        if (eq<"flags">(key)) {
          problem = read_flags(value, record.flags, skipped_);
        } else if (eq<"file">(key)) {
          // Ruby writes "file":null for objects allocated outside any Ruby frame.
          bool null = false;
          if (value.is_null().get(null)) return kInvalidJson;
          if (!null) problem = read_string(value, "file", record.file, skipped_);
        } else {
          read_top_level_flag(value, key, record.flags);
        }
        break;
      case 'l':
        if (eq<"line">(key)) problem = read_uint(value, "line", record.line, skipped_);
        break;
      case 'g':
        if (eq<"generation">(key)) {
          problem = read_uint(value, "generation", record.generation, skipped_);
        }
        break;
      case 's':
        if (eq<"slot_size">(key)) {
          problem = read_uint(value, "slot_size", record.slot_size, skipped_);
        } else if (eq<"struct">(key)) {
          problem = read_string(value, "struct", record.detail, skipped_);
        } else {
          read_top_level_flag(value, key, record.flags);
        }
        break;
      case 'n':
        if (eq<"name">(key)) problem = read_string(value, "name", record.name, skipped_);
        break;
      case 'i':
        if (eq<"imemo_type">(key)) problem = read_string(value, "imemo_type", record.detail, skipped_);
        break;
      case 'e':
        read_top_level_flag(value, key, record.flags);
        break;
      case 'v':
        if (eq<"value">(key)) {
          // As written: comparing escaped texts compares the strings, and nothing is copied.
          std::string_view token = value.raw_json_token();
          while (!token.empty() && token.back() != '"') token.remove_suffix(1);
          if (token.size() >= 2 && token.front() == '"') {
            record.value = token.substr(1, token.size() - 2);
            record.has_value = true;
          }
        }
        break;
      default:
        break;
    }
    if (!problem.empty()) return problem;
  }

  if (record.type.size() == 4 && std::memcmp(record.type.data(), "ROOT", 4) == 0) {
    record.kind = DumpRecord::Kind::kRoot;
  } else if (record.type.size() == 5 && std::memcmp(record.type.data(), "SHAPE", 5) == 0) {
    record.kind = DumpRecord::Kind::kShape;
  } else if (record.type.size() == 4 && std::memcmp(record.type.data(), "NONE", 4) == 0) {
    record.kind = DumpRecord::Kind::kFreeSlot;
  } else {
    record.kind = DumpRecord::Kind::kObject;
    if (!address_seen) return kMissingAddress;
  }
  return {};
}

}  // namespace memprof::heap
