#include "trace/prototype_files.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "core/util/proc_file.h"

namespace memprof::trace {
namespace {

// The *.conf files of `directory` in name order; none when it does not exist.
std::vector<std::string> conf_files_in(const std::string& directory) {
  std::vector<std::string> files;
  std::error_code error;
  for (std::filesystem::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
    const std::filesystem::path& path = it->path();
    if (path.extension() == ".conf" && it->is_regular_file(error)) files.push_back(path.string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void append(std::vector<std::string>& to, std::vector<std::string> files) {
  to.insert(to.end(), std::make_move_iterator(files.begin()), std::make_move_iterator(files.end()));
}

}  // namespace

ConfigLocations config_locations_from_environment() {
  ConfigLocations locations;
  if (const char* home = std::getenv("HOME")) locations.home = home;
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg != nullptr && *xdg != '\0') {
    locations.xdg_config_home = xdg;
  } else if (!locations.home.empty()) {
    locations.xdg_config_home = locations.home + "/.config";
  }
  return locations;
}

std::vector<std::string> default_prototype_files(const ConfigLocations& locations) {
  std::vector<std::string> files;
  append(files, conf_files_in(locations.system_root + "/usr/share/ltrace"));
  files.push_back(locations.system_root + "/etc/ltrace.conf");
  if (!locations.xdg_config_home.empty()) append(files, conf_files_in(locations.xdg_config_home + "/ltrace"));
  if (!locations.home.empty()) {
    append(files, conf_files_in(locations.home + "/.ltrace"));
    files.push_back(locations.home + "/.ltrace.conf");
  }
  return files;
}

std::vector<std::string> default_prototype_files() {
  return default_prototype_files(config_locations_from_environment());
}

Result<LoadedPrototypes> load_prototype_files(const std::vector<std::string>& paths, MissingFile missing) {
  LoadedPrototypes loaded;
  for (const std::string& path : paths) {
    int error_number = 0;
    Result<std::string> text = read_proc_file(path, &error_number);
    if (!text.ok()) {
      if (missing == MissingFile::kError) return err("cannot read prototype file {}", text.message());
      if (error_number != ENOENT) loaded.problems.push_back(fmt::format("cannot read prototype file {}", text.message()));
      continue;
    }
    append(loaded.problems, add_prototypes(loaded.prototypes, *text, path));
    loaded.files_read.push_back(path);
  }
  return loaded;
}

}  // namespace memprof::trace
