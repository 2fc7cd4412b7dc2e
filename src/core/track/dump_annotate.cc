#include "core/track/dump_annotate.h"

#include <charconv>

#include <fmt/format.h>

#include "core/util/json_escape.h"

namespace memprof::track {
namespace {

// Marks an object of the dump's writer (dump_own_objects.h); read by memprof's dump reader.
constexpr std::string_view kOwnField = R"(, "memprof_own":true)";

// Ruby's allocation fields as ObjectSpace.dump writes them, in this order, before "memsize":
// `, "file":"F", "line":N[, "method":"M"][, "generation":G]`.
struct RubyAllocationFields {
  size_t begin = 0;  // of the leading ", "
  size_t end = 0;    // just past the last field
  std::string_view file;  // as written (escaped)
  std::string_view line;
};

// Past the JSON string whose opening quote is at `quote`, or npos when it does not end.
size_t past_string(std::string_view text, size_t quote) {
  for (size_t i = quote + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// Past the digits at `at` (none: npos).
size_t past_digits(std::string_view text, size_t at) {
  size_t end = at;
  while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
  return end == at ? std::string_view::npos : end;
}

std::optional<RubyAllocationFields> ruby_allocation_fields(std::string_view line) {
  constexpr std::string_view kFile = ", \"file\":", kLine = ", \"line\":", kMethod = ", \"method\":",
                             kGeneration = ", \"generation\":";
  RubyAllocationFields fields;
  fields.begin = line.find(kFile);
  if (fields.begin == std::string_view::npos) return std::nullopt;
  const size_t file_quote = fields.begin + kFile.size();
  size_t at = file_quote < line.size() && line[file_quote] == '"' ? past_string(line, file_quote)
                                                                   : std::string_view::npos;
  if (at == std::string_view::npos || line.substr(at, kLine.size()) != kLine) return std::nullopt;
  fields.file = line.substr(file_quote + 1, at - file_quote - 2);
  const size_t line_digits = at + kLine.size();
  at = past_digits(line, line_digits);
  if (at == std::string_view::npos) return std::nullopt;
  fields.line = line.substr(line_digits, at - line_digits);
  if (line.substr(at, kMethod.size()) == kMethod) {
    const size_t quote = at + kMethod.size();
    at = quote < line.size() && line[quote] == '"' ? past_string(line, quote) : std::string_view::npos;
    if (at == std::string_view::npos) return std::nullopt;
  }
  if (line.substr(at, kGeneration.size()) == kGeneration) {
    at = past_digits(line, at + kGeneration.size());
    if (at == std::string_view::npos) return std::nullopt;
  }
  fields.end = at;
  return fields;
}

std::string location_fields(const SourceLocation& location) {
  std::string out = ", \"file\":\"";
  append_json_escaped(out, location.file);
  out += fmt::format("\", \"line\":{}", location.line);
  if (location.generation) out += fmt::format(", \"generation\":{}", *location.generation);
  return out;
}

// The annotated line, or nullopt when it stays as it is.
// `address`: the line's, as dump_line_address reads it (read once per line by the callers).
std::optional<std::string> annotated(std::string_view line, std::optional<uintptr_t> address,
                                     const SiteLookup& lookup) {
  if (!address || !line.ends_with('}')) return std::nullopt;
  auto location = lookup(*address);
  if (!location) return std::nullopt;
  if (line.find("\"file\":") == std::string_view::npos) {
    std::string out(line.substr(0, line.size() - 1));
    out += location_fields(*location);
    out += '}';
    return out;
  }
  // Ruby traced it too. Its table keeps the entries of objects freed after its tracing stopped
  // (ObjectSpace.trace_object_allocations { } leaves them), so a new object in a reused slot
  // shows an older object's file, line, method and generation; memprof saw this object made.
  // The same file and line: Ruby's fields stay, with the method name memprof does not have.
  auto fields = ruby_allocation_fields(line);
  if (!fields) return std::nullopt;  // not as Ruby writes them: left alone
  std::string escaped_file;
  append_json_escaped(escaped_file, location->file);
  if (fields->file == escaped_file && fields->line == std::to_string(location->line)) return std::nullopt;
  std::string out(line.substr(0, fields->begin));
  out += location_fields(*location);
  out += line.substr(fields->end);
  return out;
}

// The line of an object the dump's writer made: annotated like any other (a later dump, which
// may hold it unmarked, must show the same site and generation), then marked.
std::string own_line(std::string_view line, uintptr_t address, const SiteLookup& lookup) {
  std::string out = annotated(line, address, lookup).value_or(std::string(line));
  out.insert(out.size() - 1, kOwnField);
  return out;
}

// `line` with its "references" array replaced by `array` (added when it has none).
std::string with_references(std::string_view line, std::string_view array) {
  constexpr std::string_view kKey = R"("references":)";
  const size_t key = line.find(kKey);
  if (key == std::string_view::npos) {
    const size_t close = line.rfind('}');
    if (close == std::string_view::npos) return std::string(line);
    return fmt::format("{}, {}{}{}", line.substr(0, close), kKey, array, line.substr(close));
  }
  // The array holds addresses only: its first ']' ends it.
  const size_t end = line.find(']', key);
  if (end == std::string_view::npos) return std::string(line);
  return fmt::format("{}{}{}", line.substr(0, key + kKey.size()), array, line.substr(end + 1));
}

}  // namespace

std::optional<uintptr_t> dump_line_address(std::string_view line) {
  constexpr std::string_view kPrefix = "{\"address\":\"0x";
  if (!line.starts_with(kPrefix)) return std::nullopt;
  std::string_view rest = line.substr(kPrefix.size());
  uintptr_t address = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), address, 16);
  if (ec != std::errc() || end == rest.data() || end == rest.data() + rest.size() || *end != '"')
    return std::nullopt;
  return address;
}

std::string annotate_dump_line(std::string_view line, const SiteLookup& lookup) {
  auto out = annotated(line, dump_line_address(line), lookup);
  return out ? std::move(*out) : std::string(line);
}

Result<AnnotateCounts> annotate_dump(std::istream& in, std::ostream& out, const SiteLookup& lookup,
                                     const OwnObject& own, const ParentView* parent) {
  constexpr std::string_view kRootPrefix = R"({"type":"ROOT")";
  if (parent) out << parent->root_lines;
  AnnotateCounts counts;
  std::string line;
  while (std::getline(in, line)) {
    ++counts.lines;
    if (parent && line.starts_with(kRootPrefix)) continue;
    const auto address = dump_line_address(line);
    if (parent && address) {
      if (auto found = parent->references.find(*address); found != parent->references.end())
        line = with_references(line, found->second);
    }
    if (own && address && line.ends_with('}') && own(*address)) {
      ++counts.own;
      out << own_line(line, *address, lookup) << '\n';
    } else if (auto changed = annotated(line, address, lookup)) {
      ++counts.annotated;
      out << *changed << '\n';
    } else {
      out << line << '\n';
    }
    if (!out) return err("write failed after {} lines", counts.lines);
  }
  if (in.bad()) return err("read failed after {} lines", counts.lines);
  return counts;
}

}  // namespace memprof::track
