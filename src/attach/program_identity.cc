#include "attach/program_identity.h"

#include <elf.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "core/elf/elf_file.h"
#include "core/util/proc_file.h"

namespace memprof::attach {
namespace {

// Whether the NUL-separated environment block `environ` has LD_PRELOAD naming a file called
// like `agent_library` (the loader takes ':' and ' ' as separators).
bool preloads(std::string_view environ, std::string_view agent_library) {
  const std::string_view file = agent_library.substr(agent_library.rfind('/') + 1);
  constexpr std::string_view kPrefix = "LD_PRELOAD=";
  for (size_t at = 0; at < environ.size();) {
    size_t end = environ.find('\0', at);
    if (end == std::string_view::npos) end = environ.size();
    std::string_view entry = environ.substr(at, end - at);
    at = end + 1;
    if (!entry.starts_with(kPrefix)) continue;
    entry.remove_prefix(kPrefix.size());
    while (!entry.empty()) {
      const size_t cut = entry.find_first_of(": ");
      const std::string_view item = entry.substr(0, cut);
      if (item.substr(item.rfind('/') + 1) == file) return true;
      entry.remove_prefix(cut == std::string_view::npos ? entry.size() : cut + 1);
    }
  }
  return false;
}

}  // namespace

ProgramIdentity read_program(pid_t pid) {
  ProgramIdentity program;
  auto auxv = read_proc_file(fmt::format("/proc/{}/auxv", pid));
  if (!auxv.ok()) return program;
  uint64_t base = 0;
  bool secure = false;
  for (size_t at = 0; at + 16 <= auxv->size(); at += 16) {
    uint64_t type = 0, value = 0;
    std::memcpy(&type, auxv->data() + at, 8);
    std::memcpy(&value, auxv->data() + at + 8, 8);
    if (type == AT_NULL) break;
    if (type == AT_BASE) base = value;
    if (type == AT_SECURE) secure = value != 0;
    if (type == AT_RANDOM && value != 0) {
      program.random_bytes = value;
      program.interpreter_base = base;
      program.secure = secure;
    }
  }
  return program;
}

Status agent_preloadable(pid_t pid, const ProgramIdentity& program, const std::string& agent_library) {
  if (!program.known()) return ok_status();
  if (program.interpreter_base == 0)
    return err("the program is statically linked: memprof's agent cannot be preloaded into it");
  if (program.secure)
    return err("the program gained privileges (setuid, setgid or file capabilities): the loader ignores "
               "LD_PRELOAD for it");
  auto environ = read_proc_file(fmt::format("/proc/{}/environ", pid));
  if (environ.ok() && !environ->empty() && !preloads(*environ, agent_library))
    return err("the program was started without memprof's agent in LD_PRELOAD (the command cleared or "
               "replaced it)");
  return ok_status();
}

namespace {

// Where execvp finds `program`: itself when it names a path, else the first executable file of
// that name in $PATH (or its default); "" when there is none (execvp then says why).
std::string executable_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::string_view directories = path != nullptr ? path : "/bin:/usr/bin";
  while (true) {
    const size_t colon = directories.find(':');
    std::string directory(directories.substr(0, colon));
    std::string candidate = (directory.empty() ? std::string(".") : directory) + "/" + program;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (colon == std::string_view::npos) return "";
    directories.remove_prefix(colon + 1);
  }
}

}  // namespace

Status executable_preloadable(const std::string& program) {
  const std::string path = executable_path(program);
  if (path.empty()) return ok_status();
  auto elf = elf::ElfFile::open(path);
  if (!elf.ok()) return ok_status();  // a script, or unreadable: the exec will tell
  const bool has_interpreter = std::any_of(elf->segments().begin(), elf->segments().end(),
                                           [](const elf::Segment& segment) { return segment.type == PT_INTERP; });
  if (has_interpreter) return ok_status();
  return err("{} is statically linked: memprof's agent cannot be preloaded into it, so it was not run "
             "(trace and native need a dynamically linked program)",
             program);
}

}  // namespace memprof::attach
