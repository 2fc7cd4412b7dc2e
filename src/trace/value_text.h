// ltrace's text for one value that is already in hand (ltrace 0.7.3's lens_default.c): integers
// under each lens, characters, floating-point numbers, quoted strings. Reading memory and
// choosing registers is call_format's job.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trace/prototype.h"

namespace memprof::trace {

// The value of an integer-like type (integers, chars, addresses, pointers) as a 64-bit number:
// `bits` cut to the type's width, then sign-extended for the signed types.
uint64_t integer_value(BaseType base, uint64_t bits);

// A non-floating scalar under its lens: "-1", "4294967295", "'a'", "0x7ffd1234", "0755", "true",
// "<3-5,7>", "SIGINT". Plain addresses are hex and 0 is "0" (ltrace keeps "nil" for pointers it
// dereferences). `bits` is the register or the memory it came from, zero-extended.
std::string integer_text(const Type& type, uint64_t bits);

// A float (the low 4 bytes of `bits`) or double: "%f", or "%a" under hex().
std::string floating_text(const Type& type, uint64_t bits);

// printf's "%#x": "0x7ffd1234", and "0" for 0.
std::string hex_text(uint64_t value);

// A value without a prototype, as ltrace guesses: decimal within -10000..10000, hex beyond.
std::string guessed_text(uint64_t bits);

// One character as ltrace writes it inside quotes: \0 \a \b \t \n \v \f \r \\ , printable ASCII
// as itself (quotes too: ltrace does not escape them), anything else as three octal digits.
void append_escaped_char(std::string& out, unsigned char c);

// `bytes` between double quotes, escaped; "..." follows the closing quote when `truncated`.
std::string quoted_string(std::string_view bytes, bool truncated);

}  // namespace memprof::trace
