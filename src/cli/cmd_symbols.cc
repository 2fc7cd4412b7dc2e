// memprof symbols (PID|FILE) [REGEX]: the symbols of a live process (every loaded object, at
// runtime addresses) or of an ELF file (file addresses).
#include <elf.h>

#include <charconv>
#include <regex>

#include <fmt/format.h>

#include "cli/command.h"
#include "core/elf/demangle.h"
#include "core/elf/object_symbols.h"
#include "core/proc/symbol_index.h"

namespace memprof::cli {
namespace {

struct SymbolsOptions {
  std::string target;
  std::string pattern;
  bool no_debug_files = false;
};

std::optional<pid_t> parse_pid(const std::string& text) {
  pid_t pid = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return pid;
}

const char* type_name(uint8_t type) {
  switch (type) {
    case STT_FUNC: return "func";
    case STT_GNU_IFUNC: return "ifunc";
    case STT_OBJECT: return "object";
    case STT_TLS: return "tls";
    default: return "other";
  }
}

class Printer {
 public:
  explicit Printer(const std::optional<std::regex>& pattern) : pattern_(pattern) {}

  void print(const elf::ObjectSymbols::Entry& entry, uint64_t address, const std::string& object) {
    // Matched against the name ("malloc", so that '^malloc$' finds it), the versioned one
    // ("malloc@@GLIBC_2.2.5") and both demangled ("foo::bar()", "foo::bar()@@V1").
    std::string name = entry.display_name();
    std::string demangled = elf::demangle(entry.name);
    std::string shown = demangled + name.substr(entry.name.size());
    auto matches = [&](std::string_view text) { return std::regex_search(text.begin(), text.end(), *pattern_); };
    if (pattern_ && !matches(entry.name) && !matches(name) && !matches(demangled) && !matches(shown)) return;
    if (matches_ == 0) fmt::print("{:<18}  {:>8}  {:<6}  {}  {}\n", "ADDRESS", "SIZE", "TYPE", "NAME", "OBJECT");
    ++matches_;
    fmt::print("{:#018x}  {:>8}  {:<6}  {}  {}\n", address, entry.size, type_name(entry.type), shown,
               object);
  }
  size_t matches() const { return matches_; }

 private:
  const std::optional<std::regex>& pattern_;
  size_t matches_ = 0;
};

int run_symbols(const SymbolsOptions& options) {
  std::optional<std::regex> pattern;
  if (!options.pattern.empty()) {
    try {
      pattern.emplace(options.pattern, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      return fail(fmt::format("invalid REGEX '{}': {}", options.pattern, e.what()));
    }
  }
  Printer printer(pattern);
  if (auto pid = parse_pid(options.target)) {
    auto index = proc::SymbolIndex::for_process(*pid, !options.no_debug_files);
    if (!index) return fail(index.message());
    for (const auto& warning : index->warnings()) {
      std::fprintf(stderr, "memprof: warning: %s\n", warning.c_str());
    }
    for (const auto& indexed : index->objects()) {
      if (!indexed.symbols) continue;
      for (const auto& entry : indexed.symbols->entries()) {
        printer.print(entry, entry.address + indexed.object.load_bias, indexed.object.path);
      }
      // An offset in the TLS block, the same in every thread: no load bias.
      for (const auto& entry : indexed.symbols->thread_locals()) {
        printer.print(entry, entry.address, indexed.object.path);
      }
    }
  } else {
    auto symbols = elf::ObjectSymbols::load(options.target, !options.no_debug_files);
    if (!symbols) return fail(symbols.message());
    for (const auto& entry : symbols->entries()) printer.print(entry, entry.address, options.target);
    for (const auto& entry : symbols->thread_locals()) printer.print(entry, entry.address, options.target);
  }
  if (printer.matches() == 0) {
    return fail(pattern ? fmt::format("no symbol matches '{}' in {}", options.pattern, options.target)
                        : fmt::format("{}: no symbols", options.target));
  }
  return 0;
}

MEMPROF_COMMAND(
    "symbols", "List the symbols of a running process or an ELF file",
    [](CLI::App& sub) -> std::function<int()> {
      auto options = std::make_shared<SymbolsOptions>();
      sub.add_option("TARGET", options->target,
                     "PID of a running process (all its loaded objects) or path of an ELF file")
          ->required();
      sub.add_option("REGEX", options->pattern,
                     "Only symbols whose name contains a match (ECMAScript regex, e.g. '^rb_newobj$')");
      sub.add_flag("--no-debug-files", options->no_debug_files,
                   "Do not merge symbols from separate debug files under /usr/lib/debug");
      sub.footer(
          "Prints ADDRESS SIZE TYPE NAME OBJECT for every defined function and data symbol from\n"
          ".dynsym, .symtab and the separate debug file (by build-id or .gnu_debuglink) when one is\n"
          "installed. Versioned symbols print as name@@VERSION (default) or name@VERSION (hidden),\n"
          "one line per version. Thread-local variables (TYPE tls, e.g. errno) follow each object's\n"
          "symbols; their ADDRESS is the offset in the object's TLS block, which every thread has\n"
          "its own copy of.\n"
          "For a PID the addresses are where the symbols are in that process (the loader's link_map,\n"
          "read with process_vm_readv); for a FILE they are the file's link-time addresses.\n"
          "Exit status 1 with one line on stderr when nothing matches or the target is unusable.");
      return [options] { return run_symbols(*options); };
    });

}  // namespace
}  // namespace memprof::cli
