#include "heap/raw_file_name.h"

#include <algorithm>

#include <fmt/format.h>

namespace memprof::heap {

bool escape_raw_file_name(std::string_view line, std::string& out) {
  constexpr std::string_view kKey = "\"file\":\"", kAfter = "\", \"line\":";
  const size_t key = line.find(kKey);
  if (key == std::string_view::npos) return false;
  const size_t begin = key + kKey.size();
  const size_t end = line.find(kAfter, begin);
  if (end == std::string_view::npos) return false;
  const std::string_view name = line.substr(begin, end - begin);
  auto needs_escape = [](char c) { return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20; };
  if (std::none_of(name.begin(), name.end(), needs_escape)) return false;
  out.assign(line.substr(0, begin));
  for (char c : name) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  out += line.substr(end);
  return true;
}

}  // namespace memprof::heap
