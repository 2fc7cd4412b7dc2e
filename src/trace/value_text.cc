#include "trace/value_text.h"

#include <bit>
#include <cstring>

#include <fmt/format.h>

namespace memprof::trace {
namespace {

bool is_signed(BaseType base) {
  return base == BaseType::kChar || base == BaseType::kShort || base == BaseType::kInt || base == BaseType::kLong;
}

uint64_t truncated(BaseType base, uint64_t bits) {
  size_t width = width_of(base);
  return width >= 8 ? bits : bits & ((uint64_t{1} << (8 * width)) - 1);
}

// Ranges of set bits, lowest first: "<3-5,7>". With more bits set than clear, the clear ones
// after a '~': "~<0>".
std::string bitvec_text(uint64_t value, size_t width) {
  const size_t bits = 8 * width;
  const bool inverted = static_cast<size_t>(std::popcount(value)) > bits / 2;
  if (inverted) value = ~value;
  std::string text = inverted ? "~<" : "<";
  bool first = true;
  for (size_t bit = 0; bit < bits;) {
    if (!((value >> bit) & 1)) {
      ++bit;
      continue;
    }
    size_t last = bit;
    while (last + 1 < bits && ((value >> (last + 1)) & 1)) ++last;
    text += first ? "" : ",";
    text += last == bit ? fmt::format("{}", bit) : fmt::format("{}-{}", bit, last);
    first = false;
    bit = last + 1;
  }
  return text + ">";
}

std::string plain_integer_text(BaseType base, uint64_t value) {
  switch (base) {
    case BaseType::kChar: {
      std::string text = "'";
      append_escaped_char(text, static_cast<unsigned char>(value));
      return text + "'";
    }
    case BaseType::kAddress:
    case BaseType::kString:
    case BaseType::kPointer: return hex_text(value);
    default: return is_signed(base) ? fmt::format("{}", static_cast<int64_t>(value)) : fmt::format("{}", value);
  }
}

std::string enum_text(const Type& type, uint64_t value) {
  for (const EnumConstant& constant : *type.constants) {
    if (static_cast<uint64_t>(constant.value) == value) return constant.name;
  }
  // ltrace shows a value no constant has as its underlying integer.
  return is_signed(type.base) ? fmt::format("{}", static_cast<int64_t>(value)) : fmt::format("{}", value);
}

}  // namespace

uint64_t integer_value(BaseType base, uint64_t bits) {
  uint64_t value = truncated(base, bits);
  size_t width = width_of(base);
  if (!is_signed(base) || width >= 8) return value;
  const uint64_t sign_bit = uint64_t{1} << (8 * width - 1);
  return (value ^ sign_bit) - sign_bit;
}

std::string integer_text(const Type& type, uint64_t bits) {
  const uint64_t value = integer_value(type.base, bits);
  // hex, octal, bool and bitvec look at the bits of the type's width, without sign extension.
  const uint64_t unsigned_bits = truncated(type.base, bits);
  switch (type.lens) {
    case Lens::kHex: return hex_text(unsigned_bits);
    case Lens::kOctal: return fmt::format("0{:o}", unsigned_bits);
    case Lens::kBool: return unsigned_bits == 0 ? "false" : "true";
    case Lens::kBitvec: return bitvec_text(unsigned_bits, width_of(type.base));
    case Lens::kEnum: return enum_text(type, value);
    case Lens::kHidden: return "";
    case Lens::kPlain: break;
  }
  return plain_integer_text(type.base, value);
}

std::string floating_text(const Type& type, uint64_t bits) {
  double value;
  if (type.base == BaseType::kFloat) {
    value = std::bit_cast<float>(static_cast<uint32_t>(bits));
  } else {
    value = std::bit_cast<double>(bits);
  }
  if (type.lens == Lens::kHidden) return "";
  return type.lens == Lens::kHex ? fmt::format("{:a}", value) : fmt::format("{:f}", value);
}

std::string hex_text(uint64_t value) { return value == 0 ? "0" : fmt::format("{:#x}", value); }

std::string guessed_text(uint64_t bits) {
  auto value = static_cast<int64_t>(bits);
  if (value < -10000 || value > 10000) return hex_text(bits);
  return fmt::format("{}", value);
}

void append_escaped_char(std::string& out, unsigned char c) {
  switch (c) {
    case '\0': out += "\\0"; return;
    case '\a': out += "\\a"; return;
    case '\b': out += "\\b"; return;
    case '\t': out += "\\t"; return;
    case '\n': out += "\\n"; return;
    case '\v': out += "\\v"; return;
    case '\f': out += "\\f"; return;
    case '\r': out += "\\r"; return;
    case '\\': out += "\\\\"; return;
    default: break;
  }
  // The C locale's isprint, whatever locale the process runs in.
  if (c >= 0x20 && c < 0x7f) {
    out += static_cast<char>(c);
  } else {
    out += fmt::format("\\{:03o}", c);
  }
}

std::string quoted_string(std::string_view bytes, bool truncated) {
  std::string text = "\"";
  for (char c : bytes) append_escaped_char(text, static_cast<unsigned char>(c));
  text += '"';
  if (truncated) text += "...";
  return text;
}

}  // namespace memprof::trace
