// Reading the "0x7f35c85e0010" addresses of a dump line, the most frequent values in a dump
// (every object has one, most have a class and references: 3 to 4 per line). A loop over the
// digits costs a compare-and-branch per character; this reads the 16 bytes after "0x" as two
// 64-bit words and classifies, converts and packs all digits at once (SWAR: SIMD within a
// register), with no loop and one data-dependent branch.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace memprof::heap {

namespace hex_detail {

inline constexpr uint64_t kOnes = 0x0101010101010101ull;
inline constexpr uint64_t kHigh = 0x8080808080808080ull;

// The high bit of each byte of `w` set when the byte is an ASCII hex digit (0-9, a-f, A-F).
inline uint64_t hex_digit_bytes(uint64_t w) {
  const uint64_t ascii = ~w & kHigh;  // bytes >= 0x80 are never digits
  const uint64_t low7 = w & ~kHigh;   // adding to these never carries into the next byte
  // x >= lo  <=>  x + (0x80 - lo) has its high bit set; x > hi  <=>  x + (0x7f - hi) has it.
  const uint64_t digit = (low7 + kOnes * (0x80 - '0')) & ~(low7 + kOnes * (0x7f - '9'));
  const uint64_t lower = low7 | kOnes * 0x20;  // 'A'-'F' -> 'a'-'f'
  const uint64_t letter = (lower + kOnes * (0x80 - 'a')) & ~(lower + kOnes * (0x7f - 'f'));
  return (digit | letter) & ascii & kHigh;
}

// Each byte's value as a hex digit (garbage for bytes that are not digits): the low nibble, plus
// 9 for letters, whose bit 6 is set ('a' = 0x61 -> 1 + 9).
inline uint64_t nibbles(uint64_t w) { return (w & kOnes * 0x0f) + ((w >> 6) & kOnes) * 9; }

// Eight nibbles, one per byte, the first byte the most significant digit, as a 32-bit number.
inline uint64_t pack_nibbles(uint64_t n) {
  n = ((n << 4) & 0x00f000f000f000f0ull) | ((n >> 8) & 0x000f000f000f000full);    // byte pairs
  n = ((n << 8) & 0x0000ff000000ff00ull) | ((n >> 16) & 0x000000ff000000ffull);   // 16-bit pairs
  return ((n << 16) & 0x00000000ffff0000ull) | ((n >> 32) & 0x000000000000ffffull);  // 32-bit
}

}  // namespace hex_detail

// `p` points just after the opening quote of a JSON string holding "0x" and 1 to 16 hex digits:
// returns their value, or 0 when the string is anything else (0 is never a valid address). At
// least 19 bytes from `p` must be readable (a dump line is followed by 64 bytes of padding).
inline uint64_t parse_hex_address(const char* p) {
  using namespace hex_detail;
  if (p[0] != '0' || (p[1] | 0x20) != 'x') return 0;
  uint64_t lo, hi;
  std::memcpy(&lo, p + 2, 8);
  std::memcpy(&hi, p + 10, 8);
  // Digits: the bytes before the first non-digit (the closing quote, if this is an address).
  const uint64_t not_lo = ~hex_digit_bytes(lo) & kHigh;
  const uint64_t not_hi = ~hex_digit_bytes(hi) & kHigh;
  const int digits = not_lo != 0   ? std::countr_zero(not_lo) / 8
                     : not_hi != 0 ? 8 + std::countr_zero(not_hi) / 8
                                   : 16;
  if (digits == 0 || p[2 + digits] != '"') return 0;
  // Shift the digits to the end of the 16 bytes, so that leading zero bytes pad the number.
  unsigned __int128 all = (static_cast<unsigned __int128>(nibbles(hi)) << 64) | nibbles(lo);
  all <<= 8 * (16 - digits);
  return (pack_nibbles(static_cast<uint64_t>(all)) << 32) | pack_nibbles(static_cast<uint64_t>(all >> 64));
}

}  // namespace memprof::heap
