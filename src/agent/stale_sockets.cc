#include "agent/stale_sockets.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/protocol.h"
#include "core/util/scoped_fd.h"

namespace memprof::agent {
namespace {

constexpr time_t kYoungestRemovedSeconds = 60;

bool nobody_listens(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof(address.sun_path)) return false;
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return false;
  return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 &&
         errno == ECONNREFUSED;
}

}  // namespace

size_t sweep_stale_sockets(const std::string& directory) {
  const std::string stamp = directory + "/.swept";
  struct stat st {};
  if (::lstat(stamp.c_str(), &st) == 0 && ::time(nullptr) - st.st_mtime < kYoungestRemovedSeconds) return 0;
  ScopedFd touched(::open(stamp.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (touched.valid()) (void)::futimens(touched.get(), nullptr);
  return remove_stale_sockets(directory);
}

bool follow_marker_names_live_cli(const std::string& path) {
  char text[32];
  ScopedFd marker(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!marker.valid()) return false;
  const ssize_t length = ::read(marker.get(), text, sizeof text);
  const pid_t cli = length > 0 ? decode_follow_marker({text, static_cast<size_t>(length)}) : 0;
  return cli > 0 && (::kill(cli, 0) == 0 || errno == EPERM);
}

size_t remove_stale_sockets(const std::string& directory) {
  DIR* dir = ::opendir(directory.c_str());
  if (dir == nullptr) return 0;
  const time_t now = ::time(nullptr);
  size_t removed = 0;
  while (const dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    const bool socket = name.ends_with(".sock"), marker = name.ends_with(".follow");
    if (!socket && !marker) continue;
    std::string path = directory + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !(socket ? S_ISSOCK(st.st_mode) : S_ISREG(st.st_mode))) continue;
    if (now - st.st_mtime < kYoungestRemovedSeconds) continue;
    const bool stale = socket ? nobody_listens(path) : !follow_marker_names_live_cli(path);
    if (stale && ::unlink(path.c_str()) == 0) ++removed;
  }
  ::closedir(dir);
  return removed;
}

}  // namespace memprof::agent
