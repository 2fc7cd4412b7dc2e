// ltrace's text for one call, from the registers a hook captured (captured_call.h) and the
// function's prototype (or none): `"SELECT 1", -1, 0x7ffd12345678` between the parentheses and
// `0` after " = ". Pure: memory is read through the caller's MemoryReader, so the same code
// serves tests, this process (safe_read) and, later, a remote one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "trace/captured_call.h"
#include "trace/prototype.h"

namespace memprof::trace {

// Copies up to `size` bytes at `address` into `out` and returns how many it copied, stopping at
// memory it cannot read. safe_read (safe_read.h) is one for the current process.
using MemoryReader = std::function<size_t(uint64_t address, char* out, size_t size)>;

struct FormatOptions {
  // Characters of a string shown before "..." (ltrace's -s, default 32).
  size_t string_limit = 32;
  // Integer arguments shown for a function without a prototype (ltrace shows 4).
  size_t arguments_without_prototype = 4;
};

struct FormattedCall {
  std::string arguments;
  std::optional<std::string> return_value;  // absent until the call has returned
};

// Arguments follow ltrace's rules (docs/trace.md): strings quoted and escaped, cut at the limit
// with "..." after the quote, NULL strings and pointers "nil", addresses hex, hide()
// parameters left out. An argument the registers do not hold (past the sixth integer or eighth
// floating-point one, or a long double) is shown as "..." and ends the list. A string or
// pointer whose memory cannot be read is shown as its address.
FormattedCall format_call(const Prototype* prototype, const CapturedCall& call, const MemoryReader& read,
                          const FormatOptions& options = {});

// ltrace's line: "name(arguments)" padded to `align_column` - 2 characters, then " = value"
// (ltrace's -a, default 50); "name(arguments <unfinished ...>" before the return.
std::string call_line(std::string_view function_name, const FormattedCall& call, size_t align_column = 50);

}  // namespace memprof::trace
