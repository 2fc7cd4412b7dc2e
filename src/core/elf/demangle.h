// C++ symbol names for display.
#pragma once

#include <string>
#include <string_view>

namespace memprof::elf {

// The demangled form of an Itanium C++ name ("_ZN3foo3barEv" -> "foo::bar()"); other names are
// returned unchanged.
std::string demangle(std::string_view name);

// A demangled function name cut to what tells it apart in a table of call sites, as pprof shows
// names by default: no parameter lists, return type or qualifiers, and every template argument
// list as "<...>".
//   "void std::vector<int*, std::allocator<int*> >::_M_realloc_insert<int*>(iterator, int*&&)"
//     -> "std::vector<...>::_M_realloc_insert<...>"
//   "use()::{lambda(int)#1}::operator()(int) const" -> "use::{lambda(int)#1}::operator()"
// Overloads and instantiations can share a short name: the full one is in --json.
std::string short_function_name(std::string_view demangled);

}  // namespace memprof::elf
