// Minimal JSON output for reports: string escaping and comma bookkeeping. Output is compact
// (one line) and deterministic, so golden files can compare it byte for byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memprof::heap {

// Appends `text` as a JSON string literal (quotes included) to `out`, escaped as
// core/util/json_escape.h says: bytes below 0x20, '"' and '\\' escaped, everything else (UTF-8
// included) copied.
void append_json_string(std::string& out, std::string_view text);

class JsonWriter {
 public:
  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  // Inside an object: writes "key": and expects a value next.
  void key(std::string_view name);
  void value(std::string_view text);
  void value(const char* text) { value(std::string_view(text)); }
  void value(uint64_t number);
  // A literal written as is: true, false, null.
  void raw(std::string_view literal);
  void field(std::string_view name, std::string_view text) { key(name); value(text); }
  void field(std::string_view name, const char* text) { key(name); value(text); }
  void field(std::string_view name, uint64_t number) { key(name); value(number); }
  // The value, or null when there is none.
  void field_or_null(std::string_view name, std::optional<std::string_view> text) {
    key(name);
    text ? value(*text) : raw("null");
  }
  void field_or_null(std::string_view name, std::optional<uint64_t> number) {
    key(name);
    number ? value(*number) : raw("null");
  }
  void flag(std::string_view name, bool set) { key(name); raw(set ? "true" : "false"); }

  const std::string& str() const { return out_; }

 private:
  void open(char c);
  void close(char c);
  void separate();

  std::string out_;
  bool need_comma_ = false;
};

// "name":{"count":N,"memsize":M}, the shape of every total in analyze and diff.
inline void json_count(JsonWriter& json, std::string_view name, uint64_t count, uint64_t memsize) {
  json.key(name);
  json.begin_object();
  json.field("count", count);
  json.field("memsize", memsize);
  json.end_object();
}

}  // namespace memprof::heap
