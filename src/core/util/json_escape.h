// JSON string escaping, header-only so that both the heap reports (heap/json_writer.h) and the
// tracker's dump annotation (core/track, linked into the Ruby extension without the heap library)
// share one definition without a new library.
#pragma once

#include <string>
#include <string_view>

namespace memprof {

// Appends `text` escaped for the inside of a JSON string literal (no quotes around it): '"' and
// '\\' get a backslash, \n \t \r their short forms, every other byte below 0x20 \u00xx (lower-case
// hex); all other bytes, UTF-8 sequences included, are copied unchanged. Golden files compare the
// result byte for byte, so the choice of forms is part of the output format.
inline void append_json_escaped(std::string& out, std::string_view text) {
  constexpr std::string_view kHexDigits = "0123456789abcdef";
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (byte < 0x20) {
          out += "\\u00";
          out.push_back(kHexDigits[byte >> 4]);
          out.push_back(kHexDigits[byte & 0xf]);
        } else {
          out.push_back(c);
        }
    }
  }
}

// `text` as a JSON string literal, quotes included.
inline std::string json_quoted(std::string_view text) {
  std::string out = "\"";
  append_json_escaped(out, text);
  return out + '"';
}

}  // namespace memprof
