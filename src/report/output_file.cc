#include "report/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/util/scoped_fd.h"
#include "core/util/whole_lines.h"

namespace memprof::report {
namespace {

// A temporary file that is removed unless it was renamed into place.
class TemporaryFile {
 public:
  explicit TemporaryFile(const std::string& beside) : path_(beside + ".XXXXXX") {
    fd_.reset(::mkostemp(path_.data(), O_CLOEXEC));
    if (!fd_.valid()) path_.clear();
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }

  int fd() const { return fd_.get(); }
  bool valid() const { return fd_.valid(); }
  // Closes the file (reporting deferred write errors) and renames it to `target`.
  bool close_and_rename(const std::string& target) {
    // Network and quota-limited filesystems report write errors only at close.
    if (::close(fd_.release()) != 0) return false;
    if (::rename(path_.c_str(), target.c_str()) != 0) return false;
    path_.clear();
    return true;
  }

 private:
  std::string path_;
  ScopedFd fd_;
};

// The mode a plain open(path, O_CREAT, 0644) would have given: mkstemp makes files 0600.
mode_t new_file_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0644 & ~mask;
}

bool write_all(int fd, std::span<const unsigned char> bytes) {
  if (const int error = write_fully(fd, {reinterpret_cast<const char*>(bytes.data()), bytes.size()}); error != 0) {
    errno = error;  // for the caller's message
    return false;
  }
  return true;
}

// Gives the new file an existing one's mode and owner (a private report stays private), or a
// new file's mode; false when that cannot be done (another user's file).
bool take_attributes(int fd, const struct stat* existing) {
  if (existing == nullptr) return ::fchmod(fd, new_file_mode()) == 0;
  if (::fchmod(fd, existing->st_mode & 07777) != 0) return false;
  const bool ours = existing->st_uid == ::geteuid() && existing->st_gid == ::getegid();
  return ours || ::fchown(fd, existing->st_uid, existing->st_gid) == 0;
}

// Writes into `path` itself, through a symlink, into a device or a FIFO: for what must keep
// being what it is (/dev/null, /dev/stdout, a link), and files whose directory is not ours.
bool write_in_place(const std::string& path, std::span<const unsigned char> bytes) {
  ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
  if (!fd.valid() || !write_all(fd.get(), bytes)) return false;
  return ::close(fd.release()) == 0;
}

}  // namespace

Status check_output_is_not_an_input(const std::string& output, std::span<const std::string> inputs) {
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return ok_status();  // does not exist (yet)
  for (const std::string& input : inputs) {
    struct stat in {};
    if (::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
      return err("refusing to write {}: it is the input {}", output, input);
    }
  }
  return ok_status();
}

Status check_can_write(const std::string& path) {
  if (path == "-") return ok_status();
  auto cannot = [&path](int error) { return err("cannot write {}: {}", path, std::strerror(error)); };
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0) {
    if (S_ISDIR(existing.st_mode)) return cannot(EISDIR);
    return ::access(path.c_str(), W_OK) == 0 ? ok_status() : cannot(errno);
  }
  if (errno != ENOENT) return cannot(errno);
  const size_t slash = path.rfind('/');
  const std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  return ::access(directory.c_str(), W_OK | X_OK) == 0 ? ok_status() : cannot(errno);
}

bool is_standard_output(const std::string& path) {
  if (path == "-") return true;
  struct stat named {};
  struct stat out {};
  return ::stat(path.c_str(), &named) == 0 && ::fstat(STDOUT_FILENO, &out) == 0 &&
         named.st_dev == out.st_dev && named.st_ino == out.st_ino;
}

Status write_output_file(const std::string& path, std::span<const unsigned char> bytes) {
  auto failed = [&path] { return err("cannot write {}: {}", path, std::strerror(errno)); };
  if (path == "-") return write_all(STDOUT_FILENO, bytes) ? ok_status() : failed();
  struct stat link {};
  struct stat existing {};
  const bool is_link = ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode);
  const bool exists = ::stat(path.c_str(), &existing) == 0;
  if (exists && S_ISDIR(existing.st_mode)) {
    errno = EISDIR;
    return failed();
  }
  // Replacing these would turn /dev/null into a file, /dev/stdout's pipe into nothing, a link
  // into a copy: they are written through.
  if (is_link || (exists && !S_ISREG(existing.st_mode))) {
    return write_in_place(path, bytes) ? ok_status() : failed();
  }
  TemporaryFile file(path);
  // An existing file whose mode and owner cannot be given to the new one (another user's file,
  // a directory we may not write to) is rewritten in place.
  if (!file.valid() || !take_attributes(file.fd(), exists ? &existing : nullptr)) {
    if (exists) return write_in_place(path, bytes) ? ok_status() : failed();
    return failed();
  }
  if (!write_all(file.fd(), bytes) || !file.close_and_rename(path)) return failed();
  return ok_status();
}

}  // namespace memprof::report
