#include "attach/ruby_target.h"

#include <algorithm>

#include "core/elf/elf_file.h"
#include "core/proc/maps.h"
#include "core/util/path_name.h"
#include "core/util/proc_file.h"

namespace memprof::attach {

Result<RubyTarget> find_ruby(pid_t pid) {
  MEMPROF_TRY(maps, proc::read_maps(pid));
  for (const MapEntry& entry : maps) {
    std::string_view name = file_name_of(entry.path);
    if (name.starts_with("libruby") && name.find(".so") != std::string_view::npos)
      return RubyTarget{entry.path};
  }
  // A Ruby with libruby linked in exports the C API from its executable (extensions need it).
  auto exe = elf::ElfFile::open(fmt::format("/proc/{}/exe", pid));
  if (exe.ok()) {
    auto symbols = exe->dynamic_symbols();
    if (symbols.ok() && std::any_of(symbols->begin(), symbols->end(), [](const elf::Symbol& s) {
          return s.name == "ruby_api_version" && s.section_index != 0;
        }))
      return RubyTarget{};
  }
  auto command = read_proc_file(fmt::format("/proc/{}/comm", pid));
  std::string name = command.ok() ? command->substr(0, command->find('\n')) : "?";
  return err("process {} ({}) is not running Ruby: no libruby is mapped and its executable "
             "exports no Ruby API",
             pid, name);
}

std::optional<std::string> mapped_agent(pid_t pid) {
  auto maps = proc::read_maps(pid);
  if (!maps.ok()) return std::nullopt;
  for (const MapEntry& entry : *maps)
    if (file_name_of(entry.path).find("memprof_agent") != std::string_view::npos) return entry.path;
  return std::nullopt;
}

}  // namespace memprof::attach
