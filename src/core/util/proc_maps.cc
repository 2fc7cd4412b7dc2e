// Parser for /proc/PID/maps lines:
//   7f1c2a000000-7f1c2a022000 r--p 00000000 08:01 1054043   /usr/lib/x86_64-linux-gnu/libc.so.6
#include "core/util/proc_maps.h"

#include <algorithm>
#include <charconv>

#include "core/util/proc_file.h"

namespace memprof {

namespace {

// Consumes a hexadecimal number followed by `separator` (or the end when separator is 0).
bool take_hex(std::string_view& line, char separator, uint64_t& value) {
  auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), value, 16);
  if (ec != std::errc() || end == line.data()) return false;
  line.remove_prefix(end - line.data());
  if (separator == 0) return true;
  if (line.empty() || line.front() != separator) return false;
  line.remove_prefix(1);
  return true;
}

std::string_view take_word(std::string_view& line) {
  size_t start = line.find_first_not_of(' ');
  if (start == std::string_view::npos) {
    line = {};
    return {};
  }
  line.remove_prefix(start);
  size_t end = std::min(line.find(' '), line.size());
  std::string_view word = line.substr(0, end);
  line.remove_prefix(end);
  return word;
}

}  // namespace

namespace {
constexpr std::string_view kDeleted = " (deleted)";
}  // namespace

bool MapEntry::is_file() const { return path.starts_with('/') && !path.ends_with(kDeleted); }

bool MapEntry::is_deleted_file() const { return path.starts_with('/') && path.ends_with(kDeleted); }

std::string_view MapEntry::file_path() const {
  std::string_view file = path;
  if (is_deleted_file()) file.remove_suffix(kDeleted.size());
  return file;
}

Result<std::vector<MapEntry>> parse_maps(std::string_view text) {
  std::vector<MapEntry> entries;
  size_t line_number = 0;
  while (!text.empty()) {
    size_t newline = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(std::min(newline + 1, text.size()));
    ++line_number;
    if (line.empty()) continue;

    MapEntry entry;
    std::string_view perms;
    std::string_view dev;
    std::string_view inode;
    std::string_view rest = line;
    bool ok = take_hex(rest, '-', entry.start) && take_hex(rest, ' ', entry.end);
    if (ok) {
      perms = take_word(rest);
      std::string_view offset = take_word(rest);
      dev = take_word(rest);
      inode = take_word(rest);
      ok = perms.size() == 4 && take_hex(offset, 0, entry.offset) && offset.empty() &&
           dev.find(':') != std::string_view::npos && !inode.empty() && entry.start <= entry.end;
      if (ok) {
        auto [end, ec] = std::from_chars(inode.data(), inode.data() + inode.size(), entry.inode);
        ok = ec == std::errc() && end == inode.data() + inode.size();
      }
    }
    if (!ok) return err("maps line {}: malformed: {}", line_number, line);
    entry.readable = perms[0] == 'r';
    entry.writable = perms[1] == 'w';
    entry.executable = perms[2] == 'x';
    entry.shared = perms[3] == 's';
    // The path is the rest of the line after the padding; it may itself contain spaces.
    size_t path_start = rest.find_first_not_of(' ');
    if (path_start != std::string_view::npos) entry.path = std::string(rest.substr(path_start));
    entries.push_back(std::move(entry));
  }
  return entries;
}

const MapEntry* find_mapping(const std::vector<MapEntry>& entries, uint64_t address) {
  auto after = std::upper_bound(entries.begin(), entries.end(), address,
                                [](uint64_t a, const MapEntry& entry) { return a < entry.start; });
  if (after == entries.begin()) return nullptr;
  const MapEntry& candidate = *(after - 1);
  return candidate.contains(address) ? &candidate : nullptr;
}

Result<std::vector<MapEntry>> read_self_maps() {
  MEMPROF_TRY(text, read_proc_file("/proc/self/maps"));
  return parse_maps(text);
}

}  // namespace memprof
