#include "core/proc/remote_memory.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "core/proc/process_access.h"

namespace memprof::proc {

namespace {

enum class Direction { kRead, kWrite };

// One loop for both directions: a short transfer stops at the first inaccessible page and the
// next round reports it.
Status transfer(pid_t pid, Direction direction, uint64_t address, unsigned char* local_bytes,
                size_t size) {
  const char* verb = direction == Direction::kRead ? "read" : "write";
  size_t done = 0;
  while (done < size) {
    iovec local{local_bytes + done, size - done};
    iovec remote{reinterpret_cast<void*>(address + done), size - done};
    ssize_t n = direction == Direction::kRead ? ::process_vm_readv(pid, &local, 1, &remote, 1, 0)
                                              : ::process_vm_writev(pid, &local, 1, &remote, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      if (errno == ESRCH) return err("no such process: {}", pid);
      if (errno == EPERM || errno == EACCES) {
        return err("cannot {} the memory of process {}: {}", verb, pid,
                   explain_access_denied(pid));
      }
      return err("process {}: cannot {} {} bytes at {:#x}: {}", pid, verb, size - done,
                 address + done, std::strerror(errno));
    }
    if (n == 0) {
      return err("process {}: cannot {} {} bytes at {:#x}: not mapped", pid, verb, size - done,
                 address + done);
    }
    done += static_cast<size_t>(n);
  }
  return ok_status();
}

}  // namespace

Status RemoteMemory::read(uint64_t address, std::span<unsigned char> out) const {
  return transfer(pid_, Direction::kRead, address, out.data(), out.size());
}

Status RemoteMemory::write(uint64_t address, std::span<const unsigned char> bytes) const {
  // process_vm_writev takes a non-const local iovec but only reads from it.
  return transfer(pid_, Direction::kWrite, address, const_cast<unsigned char*>(bytes.data()),
                  bytes.size());
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
