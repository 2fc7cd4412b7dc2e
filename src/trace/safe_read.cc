#include "trace/safe_read.h"

#include <pthread.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>

#include "core/util/page_size.h"

namespace memprof::trace {
namespace {

// process_vm_readv stops at the first remote iovec element it cannot read in full and never
// splits one, so one element per page makes the copy end exactly where readable memory ends.
constexpr size_t kPagesPerCall = 16;

size_t bytes_left_in_page(uint64_t address) { return page_size() - address % page_size(); }

// Restores errno when the read is done, whatever the syscalls set it to.
class ErrnoKeeper {
 public:
  ErrnoKeeper() : saved_(errno) {}
  ~ErrnoKeeper() { errno = saved_; }
  ErrnoKeeper(const ErrnoKeeper&) = delete;
  ErrnoKeeper& operator=(const ErrnoKeeper&) = delete;

 private:
  int saved_;
};

// getpid() is a system call (glibc stopped caching the pid in 2.25) and the hooks copy strings
// on every traced call: the pid is asked once, and forgotten in a forked child before the child
// runs anything else.
std::atomic<pid_t> g_self_pid{0};

pid_t self_pid() {
  pid_t pid = g_self_pid.load(std::memory_order_relaxed);
  if (pid == 0) {
    pid = ::getpid();
    g_self_pid.store(pid, std::memory_order_relaxed);
  }
  return pid;
}

[[maybe_unused]] const int g_forget_pid_in_children =
    ::pthread_atfork(nullptr, nullptr, [] { g_self_pid.store(0, std::memory_order_relaxed); });

size_t copy_readable_prefix(uint64_t address, char* out, size_t size) {
  // The last byte of the address space is left out rather than let address + size wrap.
  size = std::min<uint64_t>(size, std::numeric_limits<uint64_t>::max() - address);
  const pid_t self = self_pid();
  size_t copied = 0;
  while (copied < size) {
    iovec remote[kPagesPerCall];
    size_t elements = 0;
    size_t batch = 0;
    while (elements < kPagesPerCall && copied + batch < size) {
      uint64_t at = address + copied + batch;
      size_t length = std::min<size_t>(bytes_left_in_page(at), size - copied - batch);
      remote[elements++] = {reinterpret_cast<void*>(at), length};
      batch += length;
    }
    iovec local = {out + copied, batch};
    ssize_t n = ::process_vm_readv(self, &local, 1, remote, elements, 0);
    if (n <= 0) break;
    copied += static_cast<size_t>(n);
    if (static_cast<size_t>(n) < batch) break;
  }
  return copied;
}

}  // namespace

size_t safe_read(uint64_t address, char* out, size_t size) noexcept {
  ErrnoKeeper keep_errno;
  return copy_readable_prefix(address, out, size);
}

SafeString safe_read_string(uint64_t address, char* out, size_t capacity) noexcept {
  if (capacity == 0) return {0, false};
  ErrnoKeeper keep_errno;
  const size_t limit = capacity - 1;
  size_t length = 0;
  bool terminated = false;
  // One page at a time: the string usually ends in its first page, and the page after the NUL
  // may not be mapped.
  while (length < limit) {
    uint64_t at = address + length;
    size_t wanted = std::min<size_t>(bytes_left_in_page(at), limit - length);
    size_t got = copy_readable_prefix(at, out + length, wanted);
    if (const void* nul = std::memchr(out + length, '\0', got)) {
      length = static_cast<size_t>(static_cast<const char*>(nul) - out);
      terminated = true;
      break;
    }
    length += got;
    if (got < wanted) break;
  }
  out[length] = '\0';
  return {length, terminated};
}

}  // namespace memprof::trace
