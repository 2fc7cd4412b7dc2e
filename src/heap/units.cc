#include "heap/units.h"

#include <array>
#include <string_view>

#include <fmt/format.h>

namespace memprof::heap {

std::string count_text(uint64_t count) {
  const std::string digits = std::to_string(count);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string counted_text(uint64_t count, const char* one, const char* many) {
  return count_text(count) + ' ' + (count == 1 ? one : many);
}

std::string byte_count_text(uint64_t bytes) { return counted_text(bytes, "byte", "bytes"); }

std::string bytes_text(uint64_t bytes) {
  if (bytes < 1000) return fmt::format("{} B", bytes);
  constexpr std::array<std::string_view, 5> kUnits = {"kB", "MB", "GB", "TB", "PB"};
  double value = static_cast<double>(bytes) / 1000;
  size_t unit = 0;
  // Rounding to one decimal may carry into the next unit (999.96 kB -> "1000.0 kB"): move on
  // before that happens.
  while (value >= 999.95 && unit + 1 < kUnits.size()) {
    value /= 1000;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

}  // namespace memprof::heap
