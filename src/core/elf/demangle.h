// C++ symbol names for display.
#pragma once

#include <string>
#include <string_view>

namespace memprof::elf {

// The demangled form of an Itanium C++ name ("_ZN3foo3barEv" -> "foo::bar()"); other names are
// returned unchanged.
std::string demangle(std::string_view name);

}  // namespace memprof::elf
