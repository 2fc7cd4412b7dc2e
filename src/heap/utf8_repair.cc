#include "heap/utf8_repair.h"

#include <cstddef>
#include <cstdint>

namespace memprof::heap {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed sequence at `p` (n bytes available), or 0 when the first byte does
// not start one. The second byte's range depends on the first (Unicode table 3-7).
size_t sequence_length(const unsigned char* p, size_t n) {
  const unsigned char b = p[0];
  if (b < 0x80) return 1;
  size_t length;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range
  if (b >= 0xC2 && b <= 0xDF) {
    length = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    length = 3;
    if (b == 0xE0) low = 0xA0;   // no overlong forms
    if (b == 0xED) high = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    length = 4;
    if (b == 0xF0) low = 0x90;   // no overlong forms
    if (b == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (n < length || p[1] < low || p[1] > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
  }
  return length;
}

}  // namespace

void append_repaired_utf8(std::string_view text, std::string& out) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t copied = 0;  // text[copied, i) is well-formed and not yet appended
  for (size_t i = 0; i < n;) {
    const size_t length = sequence_length(p + i, n - i);
    if (length != 0) {
      i += length;
      continue;
    }
    out.append(text.substr(copied, i - copied));
    out.append(kReplacement);
    copied = ++i;
  }
  out.append(text.substr(copied));
}

}  // namespace memprof::heap
