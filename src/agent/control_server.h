// The agent's listening socket: /tmp/memprof-UID/PID.sock (protocol.h), in a directory that only
// UID may enter, the socket 0600, and every connection's peer checked with SO_PEERCRED (same
// uid, or root). A directory that exists but belongs to someone else, or is open to others, is
// refused rather than used: another user could otherwise plant a socket the CLI would talk to.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "core/util/result.h"
#include "core/util/scoped_fd.h"

namespace memprof::agent {

class ControlServer {
 public:
  static Result<ControlServer> open(uid_t uid, pid_t pid);
  ControlServer(ControlServer&&) noexcept = default;
  ControlServer& operator=(ControlServer&&) noexcept = default;
  // Removes the socket file (only the process that made it does).
  ~ControlServer();
  // Removes the socket file now, before the reply to a detach: a CLI told "detached" finds no
  // socket left (a new attach right after it would otherwise meet the leaving agent's file).
  void remove_file();

  const std::string& path() const { return path_; }
  // Waits for a connection. Connections from a peer that is neither the owner nor root get an
  // error reply and are closed, not returned.
  Result<ScopedFd> accept();
  // Whether a connection is waiting, after at most `timeout`.
  bool wait_for_connection(std::chrono::milliseconds timeout) const;
  // The listening socket, which a forked child closes (see agent.cc's after_fork_in_child).
  int listening_fd() const { return fd_.get(); }

 private:
  ControlServer(ScopedFd fd, std::string path, pid_t owner)
      : fd_(std::move(fd)), path_(std::move(path)), owner_(owner) {}
  ScopedFd fd_;
  std::string path_;
  pid_t owner_ = 0;
};

// Creates /tmp/memprof-UID (0700) or checks that the existing one is a real directory owned by
// UID with no access for others.
Status ensure_private_directory(const std::string& path, uid_t uid);

}  // namespace memprof::agent
