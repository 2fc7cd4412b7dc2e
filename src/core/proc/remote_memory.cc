#include "core/proc/remote_memory.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "core/proc/process_access.h"

namespace memprof::proc {

Status RemoteMemory::read(uint64_t address, std::span<unsigned char> out) const {
  size_t done = 0;
  while (done < out.size()) {
    iovec local{out.data() + done, out.size() - done};
    iovec remote{reinterpret_cast<void*>(address + done), out.size() - done};
    ssize_t n = ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      if (errno == ESRCH) return err("no such process: {}", pid_);
      if (errno == EPERM || errno == EACCES) {
        return err("cannot read the memory of process {}: {}", pid_, explain_access_denied(pid_));
      }
      return err("process {}: cannot read {} bytes at {:#x}: {}", pid_, out.size() - done,
                 address + done, std::strerror(errno));
    }
    if (n == 0) {
      return err("process {}: cannot read {} bytes at {:#x}: not mapped", pid_, out.size() - done,
                 address + done);
    }
    // A short read stops at the first unreadable page; the next round reports it.
    done += static_cast<size_t>(n);
  }
  return ok_status();
}

Result<std::string> RemoteMemory::read_cstring(uint64_t address, size_t max_length) const {
  std::string text;
  // Read in small chunks that never cross a page boundary, so a string that ends just before an
  // unmapped page is still read.
  constexpr uint64_t kPage = 4096;
  while (text.size() <= max_length) {
    uint64_t at = address + text.size();
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(kPage - at % kPage, 256));
    unsigned char buffer[256];
    MEMPROF_TRY_STATUS(read(at, {buffer, chunk}));
    const void* nul = std::memchr(buffer, 0, chunk);
    if (nul != nullptr) {
      text.append(reinterpret_cast<const char*>(buffer),
                  static_cast<const unsigned char*>(nul) - buffer);
      if (text.size() > max_length) break;
      return text;
    }
    text.append(reinterpret_cast<const char*>(buffer), chunk);
  }
  return err("process {}: string at {:#x} longer than {} bytes", pid_, address, max_length);
}

}  // namespace memprof::proc
