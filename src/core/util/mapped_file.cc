#include "core/util/mapped_file.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace memprof {

Result<MappedFile> MappedFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below like any other
  // file that is not regular. Reads of a regular file ignore the flag.
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return err("{}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return err("{}: {}", path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return err("{}: is a directory", path);
  if (!S_ISREG(st.st_mode)) return err("{}: not a regular file", path);

  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ == 0) return file;
  void* addr = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (addr == MAP_FAILED) return err("{}: mmap: {}", path, std::strerror(errno));
  file.map_ = ScopedMmap(addr, file.size_);
  return file;
}

}  // namespace memprof
