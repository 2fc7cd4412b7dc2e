// The arguments a printf format string asks for, as ltrace's `format` parameter shows them: "%s
// %d %f" is as if the prototype went on with string, int, double.
#pragma once

#include <string_view>
#include <vector>

#include "trace/prototype.h"

namespace memprof::trace {

struct PrintfArgument {
  Type type;
  // long double travels on the stack, never in a register: it cannot be shown, and neither can
  // what follows it.
  bool on_stack = false;
};

// One entry per argument the conversions consume, in order: '*' widths and precisions are ints
// of their own; %% and %m consume nothing. Types follow ltrace: %d %i by size (hh is a char, h a
// short, l ll j z t a long), %u by size unsigned, %o and %x the same under oct() and hex(), %c a
// char, %s a string (at most its precision, "%.3s"), %p and %n an address, %e %f %g %a a double.
std::vector<PrintfArgument> printf_arguments(std::string_view format);

}  // namespace memprof::trace
