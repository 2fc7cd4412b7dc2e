// Reads and writes another process's memory with process_vm_readv/writev (no ptrace stop needed;
// the kernel applies the same access check as PTRACE_ATTACH, see process_access.h for the error
// text). Writes honour the target's page protections: they reach writable memory only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include "core/util/result.h"

namespace memprof::proc {

class RemoteMemory {
 public:
  explicit RemoteMemory(pid_t pid) : pid_(pid) {}
  pid_t pid() const { return pid_; }

  // Fills `out` from `address`. A partial read (unmapped page) is an error naming the address.
  Status read(uint64_t address, std::span<unsigned char> out) const;

  template <typename T>
  Result<T> read_value(uint64_t address) const {
    static_assert(std::is_trivially_copyable_v<T>);
    T value{};
    auto status = read(address, {reinterpret_cast<unsigned char*>(&value), sizeof(T)});
    if (!status.ok()) return status.error();
    return value;
  }

  // Writes `bytes` at `address`. A partial write (unmapped or read-only page) is an error naming
  // the address; the bytes before it have been written.
  Status write(uint64_t address, std::span<const unsigned char> bytes) const;

  // A NUL-terminated string of at most `max_length` bytes (longer ones are an error).
  Result<std::string> read_cstring(uint64_t address, size_t max_length = 4096) const;

 private:
  pid_t pid_;
};

}  // namespace memprof::proc
