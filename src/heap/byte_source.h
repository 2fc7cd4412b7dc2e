// Byte streams a dump is read from: a file descriptor or a memory span, decompressed on the fly
// when it starts with the gzip (1f 8b), zstd (28 b5 2f fd) or xz (fd 37 7a 58) magic; bzip2
// ("BZh") is recognized and refused with a way around. Chunked: nothing holds more
// than one input buffer of the compressed data at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/util/result.h"

namespace memprof::heap {

enum class Compression { kNone, kGzip, kZstd, kXz, kBzip2 };

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills up to `buffer.size()` bytes; 0 means end of stream (or of what could be read of it:
  // cut_short()).
  Result<size_t> read(std::span<char> buffer) {
    if (!cut_short_.empty()) return size_t{0};
    Result<size_t> n = decode(buffer);
    if (n.ok()) produced_ += *n;
    return n;
  }
  // Why a compressed stream ended before its end ("truncated gzip stream"), after giving the
  // bytes read() returned; empty when it ended well. A dump cut off in a copy or a transfer is
  // read up to the cut, as a plain file cut short is: what a decoder gave before its input ran
  // out is the data. (A corrupt stream stays an error: a decoder may give wrong bytes before it
  // sees the damage, and they would read as objects.)
  const std::string& cut_short() const { return cut_short_; }

  Compression compression() const { return compression_; }
  // Size of the underlying (possibly compressed) input in bytes, 0 when unknown (a pipe).
  uint64_t size_hint() const { return size_hint_; }
  // Bytes after the end of the compressed data that are not another member or frame (gzip
  // -d ignores such "trailing garbage" with a warning; so does memprof), once read to the end.
  uint64_t ignored_trailing_bytes() const { return ignored_trailing_bytes_; }

 protected:
  ByteSource(Compression compression, uint64_t size_hint)
      : compression_(compression), size_hint_(size_hint) {}
  virtual Result<size_t> decode(std::span<char> buffer) = 0;
  void ignore_trailing_bytes(uint64_t count) { ignored_trailing_bytes_ += count; }
  // For a decoder whose input ran out (`why`) after `given` more bytes of this call: the stream
  // ends there when it gave any byte at all, else it is an error ("NAME: WHY").
  Result<size_t> break_off(const std::string& name, std::string why, size_t given) {
    if (produced_ + given == 0) return err("{}: {}", name, why);
    cut_short_ = std::move(why);
    return given;
  }

 private:
  Compression compression_ = Compression::kNone;
  uint64_t size_hint_ = 0;
  uint64_t ignored_trailing_bytes_ = 0;
  uint64_t produced_ = 0;
  std::string cut_short_;
};

// Opens `path` and picks the decoder from its first bytes. Errors: "PATH: <strerror>".
Result<std::unique_ptr<ByteSource>> open_file_source(const std::string& path, const std::string& name);

// The same over bytes owned by the caller, which must outlive the source.
Result<std::unique_ptr<ByteSource>> open_memory_source(std::span<const unsigned char> bytes,
                                                       const std::string& name);

// Compression announced by the first bytes of a stream (fewer than 4 bytes: kNone).
Compression detect_compression(std::span<const unsigned char> head);

}  // namespace memprof::heap
