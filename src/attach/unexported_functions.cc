#include "attach/unexported_functions.h"

#include <elf.h>
#include <fnmatch.h>

#include <set>
#include <string_view>

#include <fmt/format.h>

#include "core/proc/symbol_index.h"

namespace memprof::attach {

std::vector<std::string> unexported_functions(pid_t pid, const std::string& pattern, size_t limit) {
  std::vector<std::string> found;
  auto index = proc::SymbolIndex::for_process(pid);
  if (!index.ok()) return found;
  for (const proc::IndexedObject& object : index->objects()) {
    if (object.symbols == nullptr) continue;
    std::set<std::string_view> exported;
    for (const auto& entry : object.symbols->entries())
      if (entry.table == elf::SymbolTable::kDynamic) exported.insert(entry.name);
    const std::string_view file = std::string_view(object.object.path).substr(object.object.path.rfind('/') + 1);
    std::set<std::string_view> said;
    for (const auto& entry : object.symbols->entries()) {
      const bool function = entry.type == STT_FUNC || entry.type == STT_GNU_IFUNC;
      if (!function || entry.table != elf::SymbolTable::kStatic || exported.contains(entry.name) ||
          said.contains(entry.name) || ::fnmatch(pattern.c_str(), std::string(entry.name).c_str(), 0) != 0)
        continue;
      said.insert(entry.name);
      found.push_back(fmt::format("{} ({})", entry.name, file));
      if (found.size() == limit) return found;
    }
  }
  return found;
}

}  // namespace memprof::attach
