#include "core/proc/threads.h"

#include <dirent.h>

#include <algorithm>
#include <charconv>
#include <string_view>

#include <fmt/format.h>

namespace memprof::proc {

std::vector<pid_t> process_threads(pid_t pid) {
  std::vector<pid_t> threads;
  DIR* dir = ::opendir(fmt::format("/proc/{}/task", pid).c_str());
  if (dir == nullptr) return threads;
  bool leader_alive = false;
  while (const dirent* entry = ::readdir(dir)) {
    std::string_view name = entry->d_name;
    pid_t tid = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), tid);
    if (ec != std::errc() || end != name.data() + name.size()) continue;
    if (tid == pid) {
      leader_alive = true;
    } else {
      threads.push_back(tid);
    }
  }
  ::closedir(dir);
  std::sort(threads.begin(), threads.end());
  if (leader_alive) threads.insert(threads.begin(), pid);
  return threads;
}

}  // namespace memprof::proc
