#include "attach/installation.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "core/elf/elf_file.h"
#include "core/util/path_name.h"

namespace memprof::attach {

namespace fs = std::filesystem;

namespace {

fs::path executable_directory() {
  std::error_code error;
  fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path(".") : self.parent_path();
}

Result<std::string> existing(const fs::path& path, const char* what) {
  std::error_code error;
  if (!fs::exists(path, error))
    return err("{} not found at {} (is this memprof build complete?)", what, path.string());
  return fs::weakly_canonical(path, error).string();
}

// The extension's memprof_ruby_abi string and the libruby it needs, from its ELF file.
std::optional<Extension> describe(const std::string& path) {
  auto file = elf::ElfFile::open(path);
  if (!file.ok()) return std::nullopt;
  auto symbols = file->dynamic_symbols();
  if (!symbols.ok()) return std::nullopt;
  Extension extension{path, "", ""};
  for (const elf::Symbol& symbol : *symbols) {
    if (symbol.name != "memprof_ruby_abi" || symbol.section_index == 0) continue;
    auto bytes = file->bytes_at_address(symbol.value, symbol.size);
    if (!bytes.ok()) return std::nullopt;
    std::string_view text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
    extension.ruby_abi = std::string(text.substr(0, text.find('\0')));
  }
  if (extension.ruby_abi.empty()) return std::nullopt;
  if (auto needed = file->needed_libraries(); needed.ok())
    for (std::string_view library : *needed)
      if (library.starts_with("libruby")) extension.libruby = std::string(library);
  return extension;
}

std::string major_minor(const std::string& version) {
  size_t first = version.find('.');
  size_t second = first == std::string::npos ? first : version.find('.', first + 1);
  return version.substr(0, second);
}

}  // namespace

Result<std::string> agent_library() {
  if (const char* forced = std::getenv("MEMPROF_AGENT"); forced != nullptr && *forced != '\0')
    return existing(forced, "the agent library (MEMPROF_AGENT)");
  return existing(executable_directory() / "libmemprof_agent.so", "the agent library");
}

Result<std::string> gem_entry_file() {
  return existing(executable_directory() / ".." / "lib" / "memprof.rb", "memprof's Ruby code");
}

std::vector<Extension> installed_extensions() {
  std::vector<std::string> paths;
  if (const char* listed = std::getenv("MEMPROF_EXTENSIONS"); listed != nullptr) {
    std::string_view rest = listed;
    while (!rest.empty()) {
      size_t colon = rest.find(':');
      if (colon != 0) paths.emplace_back(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  }
  fs::path here = executable_directory();
  paths.push_back((here / "ruby" / "memprof" / "memprof.so").string());
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(here / "rubies", error))
    paths.push_back((entry.path() / "memprof" / "memprof.so").string());
  paths.push_back((here / ".." / "lib" / "memprof" / "memprof.so").string());
  std::vector<Extension> extensions;
  std::set<std::string> seen;
  for (const std::string& path : paths) {
    std::string canonical = fs::weakly_canonical(path, error).string();
    if (error || !fs::exists(canonical, error) || !seen.insert(canonical).second) continue;
    if (auto extension = describe(canonical)) extensions.push_back(std::move(*extension));
  }
  return extensions;
}

Result<Extension> choose_extension(pid_t pid, const std::string& ruby_version,
                                   const RubyTarget& target,
                                   const std::vector<Extension>& extensions) {
  std::string abi = major_minor(ruby_version);
  const Extension* fallback = nullptr;
  for (const Extension& extension : extensions) {
    if (extension.ruby_abi != abi) continue;
    if (extension.libruby.empty()) {
      if (target.is_static()) return extension;
      if (fallback == nullptr) fallback = &extension;
    } else if (!target.is_static() &&
               file_name_of(target.libruby_path).starts_with(extension.libruby)) {
      return extension;
    }
  }
  if (fallback != nullptr) return *fallback;
  std::string available;
  for (const Extension& extension : extensions)
    available += fmt::format("{}{} ({})", available.empty() ? "" : ", ", extension.ruby_abi,
                             extension.libruby.empty() ? "static" : extension.libruby);
  return err("process {} runs Ruby {} ({}), and this memprof has no extension for it (it has: "
             "{}); build one (scripts/rubies, or `gem install memprof` with that Ruby)",
             pid, ruby_version, target.is_static() ? "libruby linked in" : target.libruby_path,
             available.empty() ? "none" : available);
}

}  // namespace memprof::attach
