#include "heap/json_writer.h"

#include "core/util/json_escape.h"

namespace memprof::heap {

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  append_json_escaped(out, text);
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
