// make_readable_for / remove_private_copy: dlopen runs as the target's user, in the target's
// mount namespace, so a library memprof can read may be out of its reach (memray#940: a
// root-installed library, a target under another uid, a container). Then the target gets its own
// copy.
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/proc/process_access.h"
#include "core/proc/process_view.h"
#include "core/util/proc_file.h"
#include "core/util/scoped_fd.h"
#include "inject/inject.h"
#include "core/util/path_name.h"

namespace memprof::inject {

namespace {

constexpr std::string_view kCopyDirectoryPrefix = "/tmp/memprof-inject-";

// The identity the kernel checks file access with: filesystem uid and gid, and the groups.
struct FileCredentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};

std::vector<unsigned long> numbers(std::string_view text) {
  std::vector<unsigned long> values;
  const char* at = text.data();
  const char* end = text.data() + text.size();
  while (at < end) {
    while (at < end && (*at == ' ' || *at == '\t')) ++at;
    unsigned long value = 0;
    auto [next, ec] = std::from_chars(at, end, value);
    if (ec != std::errc()) break;
    values.push_back(value);
    at = next;
  }
  return values;
}

Result<FileCredentials> target_credentials(pid_t pid) {
  auto status = read_proc_file(fmt::format("/proc/{}/status", pid));
  if (!status) return err("no such process: {}", pid);
  // "Uid: real effective saved filesystem"
  auto uids = numbers(status_field(*status, "Uid"));
  auto gids = numbers(status_field(*status, "Gid"));
  if (uids.size() < 4 || gids.size() < 4) {
    return err("process {}: cannot read its user and group ids", pid);
  }
  FileCredentials credentials{static_cast<uid_t>(uids[3]), static_cast<gid_t>(gids[3]), {}};
  for (unsigned long group : numbers(status_field(*status, "Groups"))) {
    credentials.groups.push_back(static_cast<gid_t>(group));
  }
  return credentials;
}

// mode's permission bits for `credentials`: the owner's, the group's or the others'.
bool permits(const struct stat& st, const FileCredentials& credentials, mode_t owner_bit) {
  if (st.st_uid == credentials.uid) return st.st_mode & owner_bit;
  bool in_group = st.st_gid == credentials.gid;
  for (gid_t group : credentials.groups) in_group = in_group || st.st_gid == group;
  if (in_group) return st.st_mode & (owner_bit >> 3);
  return st.st_mode & (owner_bit >> 6);
}

// Whether `credentials` may open the canonical `path` for reading: search permission on every
// directory on the way, read permission on the file. Root (uid 0) may.
bool can_read_as(const std::string& path, const FileCredentials& credentials) {
  if (credentials.uid == 0) return true;
  struct stat st {};
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    if (::stat(path.substr(0, slash).c_str(), &st) != 0 || !permits(st, credentials, S_IXUSR)) {
      return false;
    }
  }
  if (::stat("/", &st) != 0 || !permits(st, credentials, S_IXUSR)) return false;
  return ::stat(path.c_str(), &st) == 0 && permits(st, credentials, S_IRUSR);
}

Status copy_file(const std::string& from, const std::string& to, const FileCredentials& owner) {
  ScopedFd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return err("cannot read {}: {}", from, std::strerror(errno));
  ScopedFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0500));
  if (!out.valid()) return err("cannot create {}: {}", to, std::strerror(errno));
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(in.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return err("cannot read {}: {}", from, std::strerror(errno));
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t written = ::write(out.get(), buffer + done, static_cast<size_t>(n - done));
      if (written < 0 && errno == EINTR) continue;
      if (written < 0) return err("cannot write {}: {}", to, std::strerror(errno));
      done += written;
    }
  }
  if (::fchown(out.get(), owner.uid, owner.gid) != 0 || ::fchmod(out.get(), 0500) != 0) {
    return err("cannot give {} to uid {}: {}", to, owner.uid, std::strerror(errno));
  }
  return ok_status();
}

}  // namespace

Result<std::string> make_readable_for(pid_t pid, const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) {
    return err("cannot read the library {}: {}", path, std::strerror(errno));
  }
  MEMPROF_TRY(credentials, target_credentials(pid));
  const std::string root = proc::root_of(pid);
  if (root.empty() && can_read_as(resolved, credentials)) return path;

  std::string directory = root + std::string(kCopyDirectoryPrefix) + "XXXXXX";
  if (::mkdtemp(directory.data()) == nullptr) {
    return err("cannot create a directory for a copy of {} that process {} can read: {}; check "
               "that {}/tmp exists and is writable", path, pid, std::strerror(errno), root);
  }
  std::string copy = directory + "/" + std::string(file_name_of(resolved));
  Status copied = copy_file(resolved, copy, credentials);
  if (copied && ::chown(directory.c_str(), credentials.uid, credentials.gid) != 0) {
    copied = err("cannot give {} to uid {}: {}", directory, credentials.uid, std::strerror(errno));
  }
  if (!copied) {
    ::unlink(copy.c_str());
    ::rmdir(directory.c_str());
    return err("process {} (uid {}) cannot read {} and memprof could not give it a copy: {}; "
               "run memprof as root or put the library where that user can read it",
               pid, credentials.uid, path, copied.message());
  }
  return copy.substr(root.size());
}

Status remove_private_copy(pid_t pid, const std::string& path) {
  // Only "/tmp/memprof-inject-XXXXXX/NAME", as made above.
  if (!path.starts_with(kCopyDirectoryPrefix)) return ok_status();
  size_t slash = path.find('/', kCopyDirectoryPrefix.size());
  if (slash == std::string::npos || path.find('/', slash + 1) != std::string::npos) {
    return ok_status();
  }
  const std::string root = proc::root_of(pid);
  const std::string file = root + path;
  const std::string directory = root + path.substr(0, slash);
  if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
    return err("cannot remove {}: {}", file, std::strerror(errno));
  }
  if (::rmdir(directory.c_str()) != 0 && errno != ENOENT) {
    return err("cannot remove {}: {}", directory, std::strerror(errno));
  }
  return ok_status();
}

}  // namespace memprof::inject
