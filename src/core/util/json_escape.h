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

// The length of the well-formed UTF-8 sequence starting `text` (1 to 4), or 0 when it is not one
// (a stray continuation byte, a cut sequence, an overlong form, a surrogate, beyond U+10FFFF).
inline size_t utf8_sequence_length(std::string_view text) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc2 ? 2 : 0;
  if (length == 0 || lead > 0xf4 || text.size() < length) return 0;
  for (size_t i = 1; i < length; ++i)
    if ((byte(i) & 0xc0) != 0x80) return 0;
  if ((lead == 0xe0 && byte(1) < 0xa0) || (lead == 0xed && byte(1) >= 0xa0) || (lead == 0xf0 && byte(1) < 0x90) ||
      (lead == 0xf4 && byte(1) >= 0x90))
    return 0;
  return length;
}

// As json_quoted, for text that may not be UTF-8 (a Ruby file name is the bytes the program gave
// it): valid sequences are copied, each byte of an invalid one becomes \u00XX (read as Latin-1),
// so the result always parses.
inline std::string json_quoted_bytes(std::string_view text) {
  std::string out = "\"";
  while (!text.empty()) {
    size_t valid = 0;
    while (valid < text.size()) {
      size_t length = utf8_sequence_length(text.substr(valid));
      if (length == 0) break;
      valid += length;
    }
    append_json_escaped(out, text.substr(0, valid));
    text.remove_prefix(valid);
    if (text.empty()) break;
    constexpr std::string_view kHexDigits = "0123456789abcdef";
    auto bad = static_cast<unsigned char>(text.front());
    out += "\\u00";
    out.push_back(kHexDigits[bad >> 4]);
    out.push_back(kHexDigits[bad & 0xf]);
    text.remove_prefix(1);
  }
  return out + '"';
}

}  // namespace memprof
