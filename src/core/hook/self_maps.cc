#include "core/hook/self_maps.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/util/scoped_fd.h"

namespace memprof::hook {
namespace {

Result<std::string> read_whole(const char* path) {
  ScopedFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return err("{}: {}", path, std::strerror(errno));
  std::string text;
  char buffer[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return err("{}: {}", path, std::strerror(errno));
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace

Result<std::vector<MappedRange>> read_self_maps() {
  MEMPROF_TRY(text, read_whole("/proc/self/maps"));
  std::vector<MappedRange> ranges;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    // "start-end perms offset dev inode path": only the first two fields matter here.
    const char* line = text.c_str() + pos;
    char* cursor = nullptr;
    uintptr_t start = std::strtoull(line, &cursor, 16);
    if (*cursor != '-') return err("/proc/self/maps: malformed line '{}'", text.substr(pos, eol - pos));
    uintptr_t end = std::strtoull(cursor + 1, &cursor, 16);
    if (*cursor != ' ' || cursor + 4 > text.c_str() + eol)
      return err("/proc/self/maps: malformed line '{}'", text.substr(pos, eol - pos));
    ++cursor;
    int protection = (cursor[0] == 'r' ? PROT_READ : 0) | (cursor[1] == 'w' ? PROT_WRITE : 0) |
                     (cursor[2] == 'x' ? PROT_EXEC : 0);
    ranges.push_back({start, end, protection});
    pos = eol + 1;
  }
  return ranges;
}

const MappedRange* find_range(const std::vector<MappedRange>& ranges, uintptr_t address) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), address,
                             [](uintptr_t a, const MappedRange& r) { return a < r.start; });
  if (it == ranges.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

}  // namespace memprof::hook
