// Reading this process's memory at addresses that may not be mapped, without faulting. The
// tracer's hooks read the strings a traced function receives; a bad pointer must cost a short
// string, not the process. process_vm_readv on our own pid returns EFAULT where a load would
// raise SIGSEGV.
//
// Both functions run inside hooks: they never allocate, never throw, and leave errno as it was
// (the traced function's caller may be about to read it).
#pragma once

#include <cstddef>
#include <cstdint>

namespace memprof::trace {

// Copies up to `size` bytes at `address` into `out` and returns how many it copied: fewer than
// `size` when the range runs into memory that cannot be read (none when `address` itself cannot).
size_t safe_read(uint64_t address, char* out, size_t size) noexcept;

struct SafeString {
  size_t length;    // bytes copied before the NUL (out[length] is always '\0')
  bool terminated;  // the string's NUL was seen; false when cut by `capacity` or unreadable memory
};

// Copies the NUL-terminated string at `address`, at most `capacity - 1` bytes of it, into `out`
// and terminates the copy. Reads page by page, so a string running into an unmapped page yields
// the bytes before it. `capacity` 0 copies nothing.
SafeString safe_read_string(uint64_t address, char* out, size_t capacity) noexcept;

}  // namespace memprof::trace
