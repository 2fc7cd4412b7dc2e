// Where prototype files are, and reading them into one PrototypeSet.
#pragma once

#include <string>
#include <vector>

#include "core/util/result.h"
#include "trace/prototype.h"

namespace memprof::trace {

struct ConfigLocations {
  std::string home;             // $HOME
  std::string xdg_config_home;  // $XDG_CONFIG_HOME, or $HOME/.config
  std::string system_root;      // prefix of the system paths: empty, or a test's stand-in for /
};

ConfigLocations config_locations_from_environment();

// The files read when no -F is given, in reading order: a later definition of a function
// overrides an earlier one, so the user's files come last. ltrace 0.7.3 (Debian 12) reads
// /etc/ltrace.conf then ~/.ltrace.conf; ltrace 0.7.91 adds per-library files in
// /usr/share/ltrace, $XDG_CONFIG_HOME/ltrace and ~/.ltrace, which are read here too (their
// *.conf in name order, so libc.so-types.conf comes before libc.so.conf). The two fixed files are
// listed whether or not they exist; directories contribute the files they hold.
std::vector<std::string> default_prototype_files(const ConfigLocations& locations);
std::vector<std::string> default_prototype_files();

enum class MissingFile {
  kSkip,   // default files: most are absent on most machines
  kError,  // files the user named (-F)
};

struct LoadedPrototypes {
  PrototypeSet prototypes;
  // One message per line that could not be used, and per default file that exists but could
  // not be read; the caller shows them as warnings.
  std::vector<std::string> problems;
  std::vector<std::string> files_read;
};

// Reads `paths` in order into one set; typedefs of a file are visible to the files after it.
// Fails only when a file that must exist cannot be read: "cannot read prototype file PATH: ...".
Result<LoadedPrototypes> load_prototype_files(const std::vector<std::string>& paths, MissingFile missing);

}  // namespace memprof::trace
