#include "heap/json_writer.h"

#include <fmt/format.h>

namespace memprof::heap {

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (byte < 0x20) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        default: out += fmt::format("\\u{:04x}", byte); break;
      }
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

void JsonWriter::separate() {
  if (need_comma_) out_.push_back(',');
}

void JsonWriter::open(char c) {
  separate();
  out_.push_back(c);
  need_comma_ = false;
}

void JsonWriter::close(char c) {
  out_.push_back(c);
  need_comma_ = true;
}

void JsonWriter::key(std::string_view name) {
  separate();
  append_json_string(out_, name);
  out_.push_back(':');
  need_comma_ = false;
}

void JsonWriter::value(std::string_view text) {
  separate();
  append_json_string(out_, text);
  need_comma_ = true;
}

void JsonWriter::raw(std::string_view literal) {
  separate();
  out_ += literal;
  need_comma_ = true;
}

void JsonWriter::value(uint64_t number) {
  separate();
  out_ += std::to_string(number);
  need_comma_ = true;
}

}  // namespace memprof::heap
