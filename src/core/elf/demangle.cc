#include "core/elf/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace memprof::elf {

std::string demangle(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  std::string mangled(name);  // __cxa_demangle needs a NUL-terminated string
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !text) return mangled;
  return text.get();
}

}  // namespace memprof::elf
