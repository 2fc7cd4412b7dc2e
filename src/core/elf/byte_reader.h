// Bounds-checked reads from an untrusted byte span. Every access to ELF data goes through here so
// that a malformed or truncated file produces an error value instead of reading past the end.
// Values are copied out with memcpy: ELF data in a file has no alignment guarantee.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>

namespace memprof::elf {

using Bytes = std::span<const unsigned char>;

// True when [offset, offset + size) lies inside a buffer of `total` bytes, without overflow.
constexpr bool in_bounds(uint64_t offset, uint64_t size, uint64_t total) {
  return offset <= total && size <= total - offset;
}

// Copies a trivially copyable T from `offset`, or nothing when it does not fit.
template <typename T>
std::optional<T> read_at(Bytes bytes, uint64_t offset) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (!in_bounds(offset, sizeof(T), bytes.size())) return std::nullopt;
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

// The sub-span [offset, offset + size), or nothing when it does not fit.
inline std::optional<Bytes> slice(Bytes bytes, uint64_t offset, uint64_t size) {
  if (!in_bounds(offset, size, bytes.size())) return std::nullopt;
  return bytes.subspan(offset, size);
}

// The NUL-terminated string starting at `offset`; nothing when the offset is outside the buffer
// or no terminator follows before its end.
inline std::optional<std::string_view> cstring_at(Bytes bytes, uint64_t offset) {
  if (offset >= bytes.size()) return std::nullopt;
  const auto* start = reinterpret_cast<const char*>(bytes.data() + offset);
  const void* nul = std::memchr(start, 0, bytes.size() - offset);
  if (nul == nullptr) return std::nullopt;
  return std::string_view(start, static_cast<const char*>(nul) - start);
}

}  // namespace memprof::elf
