// Reading optional fields of the agent's JSON replies: absent or mistyped fields leave the
// default value (replies from an older agent may lack new fields).
#pragma once

#include <simdjson.h>

#include <string_view>

namespace memprof::attach {

template <typename T>
void read_field(simdjson::dom::element object, std::string_view key, T& out) {
  T value{};
  if (object[key].get(value) == simdjson::SUCCESS) out = value;
}

}  // namespace memprof::attach
