#include "agent/control_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/protocol.h"
#include "agent/stale_sockets.h"

namespace memprof::agent {

Status ensure_private_directory(const std::string& path, uid_t uid) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    return err("{}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return err("{}: {}", path, std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return err("{} is not a directory", path);
  if (st.st_uid != uid)
    return err("{} belongs to uid {}, not {}: remove it", path, st.st_uid, uid);
  if ((st.st_mode & 077) != 0)
    return err("{} is open to other users (mode {:o}): chmod 700 it", path, st.st_mode & 0777);
  return ok_status();
}

Result<ControlServer> ControlServer::open(uid_t uid, pid_t pid) {
  MEMPROF_TRY_STATUS(ensure_private_directory(socket_directory(uid), uid));
  std::string path = socket_path(uid, pid);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) return err("{}: path too long", path);
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return err("socket: {}", std::strerror(errno));
  // A file left by an earlier process with this pid (pids are reused) is stale: ours now.
  ::unlink(path.c_str());
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0)
    return err("{}: bind: {}", path, std::strerror(errno));
  if (::chmod(path.c_str(), 0600) != 0 || ::listen(fd.get(), 8) != 0) {
    int saved = errno;
    ::unlink(path.c_str());
    return err("{}: {}", path, std::strerror(saved));
  }
  // Sockets of processes that ended without removing theirs: requests queue meanwhile.
  sweep_stale_sockets(socket_directory(uid));
  return ControlServer(std::move(fd), std::move(path), pid);
}

ControlServer::~ControlServer() { remove_file(); }

void ControlServer::remove_file() {
  if (fd_.valid() && owner_ == ::getpid()) ::unlink(path_.c_str());
  owner_ = 0;
}

bool ControlServer::wait_for_connection(std::chrono::milliseconds timeout) const {
  pollfd listening{fd_.get(), POLLIN, 0};
  return ::poll(&listening, 1, static_cast<int>(timeout.count())) != 0;  // an error: let accept say
}

Result<ScopedFd> ControlServer::accept() {
  for (;;) {
    ScopedFd connection(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!connection.valid()) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN) continue;
      return err("accept: {}", std::strerror(errno));
    }
    ucred peer{};
    socklen_t length = sizeof(peer);
    if (::getsockopt(connection.get(), SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) continue;
    if (peer.uid != ::getuid() && peer.uid != 0) {
      (void)write_frame(connection.get(),
                        encode_reply_error(fmt::format(
                            "uid {} may not control this process (owner uid {}, or root)",
                            peer.uid, ::getuid())));
      continue;
    }
    return connection;
  }
}

}  // namespace memprof::agent
