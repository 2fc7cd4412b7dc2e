#include "core/track/dump_annotate.h"

#include <charconv>

#include <fmt/format.h>

#include "core/util/json_escape.h"

namespace memprof::track {

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
  auto address = dump_line_address(line);
  if (!address || !line.ends_with('}') || line.find("\"file\":") != std::string_view::npos)
    return std::string(line);
  auto location = lookup(*address);
  if (!location) return std::string(line);
  std::string out(line.substr(0, line.size() - 1));
  out += ", \"file\":\"";
  append_json_escaped(out, location->file);
  out += fmt::format("\", \"line\":{}", location->line);
  if (location->generation) out += fmt::format(", \"generation\":{}", *location->generation);
  out += '}';
  return out;
}

Result<AnnotateCounts> annotate_dump(std::istream& in, std::ostream& out,
                                     const SiteLookup& lookup) {
  AnnotateCounts counts;
  std::string line;
  while (std::getline(in, line)) {
    ++counts.lines;
    std::string annotated = annotate_dump_line(line, lookup);
    if (annotated.size() != line.size()) ++counts.annotated;
    out << annotated << '\n';
    if (!out) return err("write failed after {} lines", counts.lines);
  }
  if (in.bad()) return err("read failed after {} lines", counts.lines);
  return counts;
}

}  // namespace memprof::track
