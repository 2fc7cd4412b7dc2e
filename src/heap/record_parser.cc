#include "heap/record_parser.h"

#include <cstring>
#include <limits>

#include "heap/heap.h"
#include "heap/hex_address.h"

namespace memprof::heap {

static_assert(kLinePadding == simdjson::SIMDJSON_PADDING);
static_assert(kLinePadding >= 19);  // parse_hex_address reads 19 bytes from a string in the line

namespace {

namespace od = simdjson::ondemand;

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
  return 0;
}

// Reason strings for bad lines. Static storage: they outlive the parse call.
constexpr std::string_view kInvalidJson = "invalid JSON";
constexpr std::string_view kNotAnObject = "not a JSON object";
constexpr std::string_view kMissingAddress = "missing address";
constexpr std::string_view kBadAddress = "address is not a hex string";
constexpr std::string_view kBadReferences = "references is not an array of addresses";
constexpr std::string_view kBadNumber = "numeric field is not a non-negative integer";
constexpr std::string_view kBadString = "string field is not a string";
constexpr std::string_view kBadFlags = "flags is not an object of booleans";

// frozen, embedded, shared, fstring, singleton: booleans at the top level. A value of another
// type is ignored (informational fields must not cost the whole line).
void read_top_level_flag(od::value value, RawKey key, uint16_t& flags) {
  uint16_t bit = top_level_flag_bit(key);
  bool set = false;
  if (bit != 0 && value.get_bool().get(set) == simdjson::SUCCESS && set) flags |= bit;
}

std::string_view read_references(od::value value, std::vector<uint64_t>& references) {
  od::array array;
  if (value.get_array().get(array)) return kBadReferences;
  for (auto element : array) {
    od::raw_json_string raw;
    if (element.get_raw_json_string().get(raw)) return kBadReferences;
    uint64_t address = parse_hex_address(raw.raw());
    if (address == 0) return kBadReferences;
    references.push_back(address);
  }
  return {};
}

std::string_view read_flags(od::value value, uint16_t& flags) {
  od::object object;
  if (value.get_object().get(object)) return kBadFlags;
  for (auto field : object) {
    od::raw_json_string key;
    bool set = false;
    if (field.key().get(key) || field.value().get_bool().get(set)) return kBadFlags;
    if (set) flags |= flag_bit(RawKey{key.raw()});
  }
  return {};
}

template <typename T>
std::string_view read_uint(od::value value, T& out) {
  uint64_t number = 0;
  if (value.get_uint64().get(number)) return kBadNumber;
  out = number > std::numeric_limits<T>::max() ? std::numeric_limits<T>::max()
                                                : static_cast<T>(number);
  return {};
}

std::string_view read_string(od::value value, std::string_view& out) {
  return value.get_string().get(out) ? kBadString : std::string_view{};
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

std::string_view RecordParser::parse(const Line& line, DumpRecord& record,
                                     std::vector<uint64_t>& references) {
  record = DumpRecord{};
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
  for (auto field : object) {
    od::raw_json_string raw;
    if (field.key().get(raw)) return kInvalidJson;
    RawKey key{raw.raw()};
    od::value value;
    if (field.value().get(value)) return kInvalidJson;
    std::string_view problem;
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
        if (eq<"type">(key)) problem = read_string(value, record.type);
        break;
      case 'c':
        if (eq<"class">(key)) {
          od::raw_json_string text;
          // A class that is not an address (never written by Ruby) is ignored, not fatal.
          if (value.get_raw_json_string().get(text) == simdjson::SUCCESS) {
            record.class_address = parse_hex_address(text.raw());
          }
        }
        break;
      case 'r':
        if (eq<"references">(key)) {
          problem = read_references(value, references);
        } else if (eq<"root">(key)) {
          problem = read_string(value, record.root_kind);
        } else if (eq<"real_class_name">(key) && record.name.empty()) {
          problem = read_string(value, record.name);
        }
        break;
      case 'm':
        if (eq<"memsize">(key)) problem = read_uint(value, record.memsize);
        break;
      case 'f':
        if (eq<"flags">(key)) {
          problem = read_flags(value, record.flags);
        } else if (eq<"file">(key)) {
          // Ruby writes "file":null for objects allocated outside any Ruby frame.
          bool null = false;
          if (value.is_null().get(null)) return kInvalidJson;
          if (!null) problem = read_string(value, record.file);
        } else {
          read_top_level_flag(value, key, record.flags);
        }
        break;
      case 'l':
        if (eq<"line">(key)) problem = read_uint(value, record.line);
        break;
      case 'g':
        if (eq<"generation">(key)) problem = read_uint(value, record.generation);
        break;
      case 's':
        if (eq<"slot_size">(key)) {
          problem = read_uint(value, record.slot_size);
        } else if (eq<"struct">(key)) {
          problem = read_string(value, record.detail);
        } else {
          read_top_level_flag(value, key, record.flags);
        }
        break;
      case 'n':
        if (eq<"name">(key)) problem = read_string(value, record.name);  // wins over real_class_name
        break;
      case 'i':
        if (eq<"imemo_type">(key)) problem = read_string(value, record.detail);
        break;
      case 'e':
        read_top_level_flag(value, key, record.flags);
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
  } else {
    record.kind = DumpRecord::Kind::kObject;
    if (!address_seen) return kMissingAddress;
  }
  return {};
}

}  // namespace memprof::heap
