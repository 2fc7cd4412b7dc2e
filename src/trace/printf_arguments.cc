#include "trace/printf_arguments.h"

#include <cctype>

namespace memprof::trace {
namespace {

// The length modifiers seen so far in one conversion.
struct Modifiers {
  int shorter = 0;  // h, hh
  bool longer = false;  // l, ll, q, j, z, Z, t
  bool long_double = false;  // L
  bool has_precision = false;
  uint64_t precision = 0;
};

Type sized_integer(const Modifiers& modifiers, bool is_unsigned, Lens lens) {
  Type type;
  if (modifiers.shorter >= 2) {
    type.base = BaseType::kChar;  // ltrace shows %hhd and %hhu as characters
  } else if (modifiers.shorter == 1) {
    type.base = is_unsigned ? BaseType::kUShort : BaseType::kShort;
  } else if (modifiers.longer || modifiers.long_double) {
    type.base = is_unsigned ? BaseType::kULong : BaseType::kLong;
  } else {
    type.base = is_unsigned ? BaseType::kUInt : BaseType::kInt;
  }
  type.lens = lens;
  return type;
}

Type simple(BaseType base) {
  Type type;
  type.base = base;
  return type;
}

}  // namespace

std::vector<PrintfArgument> printf_arguments(std::string_view format) {
  std::vector<PrintfArgument> arguments;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') continue;
    Modifiers modifiers;
    bool in_precision = false;
    // Up to and including the conversion character; an unknown one ends the conversion.
    for (++i; i < format.size(); ++i) {
      const char c = format[i];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        if (in_precision) modifiers.precision = modifiers.precision * 10 + static_cast<uint64_t>(c - '0');
        continue;
      }
      switch (c) {
        case '#': case ' ': case '-': case '+': case 'I': case '\'': continue;
        case '.': in_precision = modifiers.has_precision = true; continue;
        case '*':  // the width or precision is an int argument of its own
          arguments.push_back({simple(BaseType::kInt)});
          if (in_precision) modifiers.has_precision = false;  // known only at run time
          continue;
        case 'h': ++modifiers.shorter; continue;
        case 'l': case 'q': case 'j': case 'z': case 'Z': case 't': modifiers.longer = true; continue;
        case 'L': modifiers.long_double = true; continue;
        case 'd': case 'i': arguments.push_back({sized_integer(modifiers, false, Lens::kPlain)}); break;
        case 'u': arguments.push_back({sized_integer(modifiers, true, Lens::kPlain)}); break;
        case 'o': arguments.push_back({sized_integer(modifiers, true, Lens::kOctal)}); break;
        case 'x': case 'X': arguments.push_back({sized_integer(modifiers, true, Lens::kHex)}); break;
        case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case 'a': case 'A':
          arguments.push_back({simple(BaseType::kDouble), modifiers.long_double});
          break;
        case 'c': case 'C': arguments.push_back({simple(BaseType::kChar)}); break;
        case 's': case 'S': {
          Type string = simple(BaseType::kString);
          if (modifiers.has_precision) {
            string.length = {StringLength::Source::kConstant, modifiers.precision, true};
          }
          arguments.push_back({string});
          break;
        }
        case 'p': case 'n': arguments.push_back({simple(BaseType::kAddress)}); break;
        default: break;  // %%, %m and unknown conversions consume nothing
      }
      break;
    }
  }
  return arguments;
}

}  // namespace memprof::trace
