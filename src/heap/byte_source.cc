#include "heap/byte_source.h"

#include <fcntl.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/util/runtime_library.h"
#include "core/util/scoped_fd.h"
#include "core/util/zlib_library.h"

namespace memprof::heap {
namespace {

// The decompressors' functions, from their libraries opened when a dump compressed so is read
// (core/util/runtime_library.h; zlib's: core/util/zlib_library.h).
#define MEMPROF_ZSTD_FUNCTIONS(X) \
  X(ZSTD_createDCtx) X(ZSTD_freeDCtx) X(ZSTD_decompressStream) X(ZSTD_isError) X(ZSTD_getErrorName)
MEMPROF_RUNTIME_LIBRARY(ZstdLibrary, "libzstd.so.1", MEMPROF_ZSTD_FUNCTIONS);
#define MEMPROF_LZMA_FUNCTIONS(X) X(lzma_stream_decoder) X(lzma_code) X(lzma_end)
MEMPROF_RUNTIME_LIBRARY(LzmaLibrary, "liblzma.so.5", MEMPROF_LZMA_FUNCTIONS);

constexpr size_t kCompressedChunk = 1 << 20;

// Raw bytes before decompression: a file or a memory span. The first bytes are read ahead to
// detect the compression and served again afterwards.
class RawInput {
 public:
  RawInput(ScopedFd fd, std::string name) : fd_(std::move(fd)), name_(std::move(name)) {}
  RawInput(std::span<const unsigned char> bytes, std::string name)
      : memory_(bytes), name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  uint64_t size_hint() const {
    if (!fd_.valid()) return memory_.size();
    struct stat info {};
    return ::fstat(fd_.get(), &info) == 0 && S_ISREG(info.st_mode) ? static_cast<uint64_t>(info.st_size) : 0;
  }
  // Size of the compressed input buffer: small inputs (tests, the fuzzer) get small buffers.
  size_t chunk_size() const {
    return fd_.valid() ? kCompressedChunk : std::clamp<size_t>(memory_.size(), 64, kCompressedChunk);
  }

  Result<size_t> read(std::span<char> buffer) {
    if (buffer.empty()) return size_t{0};
    if (!fd_.valid()) {
      size_t n = std::min(buffer.size(), memory_.size() - memory_offset_);
      std::memcpy(buffer.data(), memory_.data() + memory_offset_, n);
      memory_offset_ += n;
      return n;
    }
    for (;;) {
      ssize_t n = ::read(fd_.get(), buffer.data(), buffer.size());
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) return err("{}: {}", name_, std::strerror(errno));
    }
  }

  // Reads until `buffer` is full or the input ends (a short read is not the end of a file).
  Result<size_t> read_full(std::span<char> buffer) {
    size_t total = 0;
    while (total < buffer.size()) {
      MEMPROF_TRY(n, read(buffer.subspan(total)));
      if (n == 0) break;
      total += n;
    }
    return total;
  }

 private:
  ScopedFd fd_;
  std::span<const unsigned char> memory_;
  size_t memory_offset_ = 0;
  std::string name_;
};

// Serves `head` (the bytes read for detection) before the rest of the raw input.
class HeadThenRaw {
 public:
  HeadThenRaw(std::vector<char> head, RawInput raw) : head_(std::move(head)), raw_(std::move(raw)) {}
  const std::string& name() const { return raw_.name(); }
  size_t chunk_size() const { return raw_.chunk_size(); }
  uint64_t size_hint() const { return raw_.size_hint(); }
  Result<size_t> read(std::span<char> buffer) {
    if (head_offset_ < head_.size()) {
      size_t n = std::min(buffer.size(), head_.size() - head_offset_);
      std::memcpy(buffer.data(), head_.data() + head_offset_, n);
      head_offset_ += n;
      return n;
    }
    return raw_.read(buffer);
  }

 private:
  std::vector<char> head_;
  size_t head_offset_ = 0;
  RawInput raw_;
};

class PlainSource final : public ByteSource {
 public:
  explicit PlainSource(HeadThenRaw input)
      : ByteSource(Compression::kNone, input.size_hint()), input_(std::move(input)) {}
  Result<size_t> decode(std::span<char> buffer) override { return input_.read(buffer); }

 private:
  HeadThenRaw input_;
};

// The compressed bytes a decoder has not consumed yet, refilled from the input a chunk at a time.
class CompressedInput {
 public:
  explicit CompressedInput(HeadThenRaw raw) : raw_(std::move(raw)), buffer_(raw_.chunk_size()) {}
  const std::string& name() const { return raw_.name(); }

  // The bytes not consumed yet, read from the input when none are left; empty at its end.
  Result<std::span<const char>> pending() {
    if (position_ == size_ && !ended_) {
      MEMPROF_TRY(n, raw_.read({buffer_.data(), buffer_.size()}));
      position_ = 0;
      size_ = n;
      ended_ = n == 0;
    }
    return std::span<const char>(buffer_.data() + position_, size_ - position_);
  }
  void consume(size_t n) { position_ += n; }
  // True once the input is read to its end (what is pending is all there will be).
  bool ended() const { return ended_; }

 private:
  HeadThenRaw raw_;
  std::vector<char> buffer_;
  size_t position_ = 0;
  size_t size_ = 0;
  bool ended_ = false;
};

class GzipSource final : public ByteSource {
 public:
  GzipSource(const ZlibLibrary& zlib, HeadThenRaw input)
      : ByteSource(Compression::kGzip, input.size_hint()), zlib_(zlib), input_(std::move(input)) {}
  ~GzipSource() override {
    if (initialized_) zlib_.inflateEnd(&stream_);
  }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  Status init() {
    std::memset(&stream_, 0, sizeof stream_);
    // 15 + 16: gzip wrapper only (the magic said so), largest window.
    if (inflate_init2(zlib_, &stream_, 15 + 16) != Z_OK) return err("{}: cannot start gzip decoder", input_.name());
    initialized_ = true;
    return ok_status();
  }

  Result<size_t> decode(std::span<char> buffer) override {
    const auto capacity = static_cast<uInt>(std::min<size_t>(buffer.size(), 1u << 30));
    stream_.next_out = reinterpret_cast<Bytef*>(buffer.data());
    stream_.avail_out = capacity;
    while (capacity > 0 && stream_.avail_out == capacity) {
      MEMPROF_TRY(in, input_.pending());
      if (member_ended_) {
        if (in.empty()) return size_t{0};  // clean end after the last member
        // Concatenated gzip members (gzip a >> b) form one stream; anything else after a
        // member (a tar's padding, zeros a copy left) is ignored and said, as gzip -d does.
        if (!starts_member(in)) {
          MEMPROF_TRY_STATUS(skip_to_end());
          return size_t{capacity - stream_.avail_out};
        }
        if (zlib_.inflateReset(&stream_) != Z_OK) return err("{}: corrupt gzip stream", input_.name());
        member_ended_ = false;
      }
      if (in.empty()) return break_off(input_.name(), "truncated gzip stream", 0);
      stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
      stream_.avail_in = static_cast<uInt>(in.size());
      int rc = zlib_.inflate(&stream_, Z_NO_FLUSH);
      input_.consume(in.size() - stream_.avail_in);
      if (rc == Z_STREAM_END) {
        member_ended_ = true;
      } else if (rc != Z_OK) {
        return err("{}: corrupt gzip stream ({})", input_.name(),
                   stream_.msg ? stream_.msg : "inflate failed");
      }
    }
    return size_t{capacity - stream_.avail_out};
  }

 private:
  // Whether the pending bytes begin another gzip member (its two magic bytes; one byte left
  // at the very end cannot).
  bool starts_member(std::span<const char> in) {
    if (in.size() >= 2) return in[0] == '\x1f' && in[1] == '\x8b';
    return in[0] == '\x1f' && !input_.ended();  // the second byte may be in the next read
  }

  Status skip_to_end() {
    for (;;) {
      MEMPROF_TRY(in, input_.pending());
      if (in.empty()) return ok_status();
      ignore_trailing_bytes(in.size());
      input_.consume(in.size());
    }
  }

  const ZlibLibrary& zlib_;
  CompressedInput input_;
  z_stream stream_{};
  bool initialized_ = false;
  bool member_ended_ = false;
};

class ZstdSource final : public ByteSource {
 public:
  ZstdSource(const ZstdLibrary& zstd, HeadThenRaw input)
      : ByteSource(Compression::kZstd, input.size_hint()),
        zstd_(zstd),
        input_(std::move(input)),
        context_(zstd.ZSTD_createDCtx()) {}
  ~ZstdSource() override { zstd_.ZSTD_freeDCtx(context_); }
  ZstdSource(const ZstdSource&) = delete;
  ZstdSource& operator=(const ZstdSource&) = delete;

  Status init() {
    if (context_ == nullptr) return err("{}: cannot start zstd decoder", input_.name());
    return ok_status();
  }

  Result<size_t> decode(std::span<char> buffer) override {
    ZSTD_outBuffer out{buffer.data(), buffer.size(), 0};
    while (out.pos == 0) {
      MEMPROF_TRY(pending, input_.pending());
      if (pending.empty()) {
        // Every frame must be complete; the decoder says so by returning 0 ("frame done").
        if (!frame_done_) return break_off(input_.name(), "truncated zstd stream", 0);
        break;
      }
      ZSTD_inBuffer in{pending.data(), pending.size(), 0};
      size_t rc = zstd_.ZSTD_decompressStream(context_, &out, &in);
      input_.consume(in.pos);
      if (zstd_.ZSTD_isError(rc)) {
        return err("{}: corrupt zstd stream ({})", input_.name(), zstd_.ZSTD_getErrorName(rc));
      }
      frame_done_ = rc == 0;
    }
    return out.pos;
  }

 private:
  const ZstdLibrary& zstd_;
  CompressedInput input_;
  ZSTD_DCtx* context_;
  bool frame_done_ = true;
};

class XzSource final : public ByteSource {
 public:
  XzSource(const LzmaLibrary& lzma, HeadThenRaw input)
      : ByteSource(Compression::kXz, input.size_hint()), lzma_(lzma), input_(std::move(input)) {}
  ~XzSource() override { lzma_.lzma_end(&stream_); }
  XzSource(const XzSource&) = delete;
  XzSource& operator=(const XzSource&) = delete;

  Status init() {
    // The decoder allocates the dictionary the stream declares: xz -9 needs 65 MB, a forged
    // header could ask for 1.5 GB. Concatenated streams (xz a >> b) form one, as gzip members do.
    if (lzma_.lzma_stream_decoder(&stream_, kMemoryLimit, LZMA_CONCATENATED) != LZMA_OK) {
      return err("{}: cannot start xz decoder", input_.name());
    }
    return ok_status();
  }

  Result<size_t> decode(std::span<char> buffer) override {
    if (buffer.empty() || ended_) return size_t{0};
    stream_.next_out = reinterpret_cast<uint8_t*>(buffer.data());
    stream_.avail_out = buffer.size();
    while (stream_.avail_out == buffer.size()) {
      MEMPROF_TRY(in, input_.pending());
      stream_.next_in = reinterpret_cast<const uint8_t*>(in.data());
      stream_.avail_in = in.size();
      // LZMA_FINISH once the input is all in: the decoder then says whether the stream ended.
      const lzma_ret rc = lzma_.lzma_code(&stream_, input_.ended() ? LZMA_FINISH : LZMA_RUN);
      input_.consume(in.size() - stream_.avail_in);
      if (rc == LZMA_STREAM_END) {
        ended_ = true;
        break;
      }
      if (rc == LZMA_BUF_ERROR)
        return break_off(input_.name(), "truncated xz stream", buffer.size() - stream_.avail_out);
      if (rc != LZMA_OK) return err("{}: corrupt xz stream ({})", input_.name(), problem(rc));
    }
    return buffer.size() - stream_.avail_out;
  }

 private:
  static const char* problem(lzma_ret rc) {
    switch (rc) {
      case LZMA_FORMAT_ERROR: return "not the xz format";
      case LZMA_OPTIONS_ERROR: return "unsupported options";
      case LZMA_DATA_ERROR: return "bad data";
      case LZMA_MEM_ERROR: return "out of memory";
      case LZMA_MEMLIMIT_ERROR: return "needs more than 256 MB of memory to decode";
      default: return "decoder error";
    }
  }

  static constexpr uint64_t kMemoryLimit = uint64_t{256} << 20;

  const LzmaLibrary& lzma_;
  CompressedInput input_;
  lzma_stream stream_ = LZMA_STREAM_INIT;
  bool ended_ = false;
};

// A decoder over `input`, started (its library opened, its state allocated) or the reason it
// could not be.
template <class Decoder, class Library>
Result<std::unique_ptr<ByteSource>> start(const Result<Library>& library, std::string_view format,
                                          HeadThenRaw input) {
  if (!library) return err("{}: {}-compressed, and {}", input.name(), format, library.message());
  auto source = std::make_unique<Decoder>(*library, std::move(input));
  MEMPROF_TRY_STATUS(source->init());
  return std::unique_ptr<ByteSource>(std::move(source));
}

Result<std::unique_ptr<ByteSource>> make_source(RawInput raw) {
  std::vector<char> head(4);
  MEMPROF_TRY(n, raw.read_full(head));
  head.resize(n);
  auto compression = detect_compression(
      {reinterpret_cast<const unsigned char*>(head.data()), head.size()});
  HeadThenRaw input(std::move(head), std::move(raw));
  switch (compression) {
    case Compression::kGzip: return start<GzipSource>(ZlibLibrary::get(), "gzip", std::move(input));
    case Compression::kZstd: return start<ZstdSource>(ZstdLibrary::get(), "zstd", std::move(input));
    case Compression::kXz: return start<XzSource>(LzmaLibrary::get(), "xz", std::move(input));
    case Compression::kBzip2:
      return err("{}: bzip2-compressed; memprof reads plain, gzip, zstd and xz dumps "
                 "(bzip2 -dk {} writes the plain one)",
                 input.name(), input.name());
    case Compression::kNone:
      break;
  }
  return std::unique_ptr<ByteSource>(std::make_unique<PlainSource>(std::move(input)));
}

}  // namespace

Compression detect_compression(std::span<const unsigned char> head) {
  if (head.size() >= 2 && head[0] == 0x1f && head[1] == 0x8b) return Compression::kGzip;
  if (head.size() >= 4 && head[0] == 0x28 && head[1] == 0xb5 && head[2] == 0x2f && head[3] == 0xfd) {
    return Compression::kZstd;
  }
  if (head.size() >= 4 && head[0] == 0xfd && head[1] == '7' && head[2] == 'z' && head[3] == 'X') {
    return Compression::kXz;
  }
  // "BZh" and the block size, '1' to '9'.
  if (head.size() >= 4 && head[0] == 'B' && head[1] == 'Z' && head[2] == 'h' && head[3] >= '1' && head[3] <= '9') {
    return Compression::kBzip2;
  }
  return Compression::kNone;
}

Result<std::unique_ptr<ByteSource>> open_file_source(const std::string& path, const std::string& name) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return err("{}: {}", name, std::strerror(errno));
  // Sequential reads of a file larger than memory must not evict everything else.
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  return make_source(RawInput(std::move(fd), name));
}

Result<std::unique_ptr<ByteSource>> open_memory_source(std::span<const unsigned char> bytes,
                                                       const std::string& name) {
  return make_source(RawInput(bytes, name));
}

}  // namespace memprof::heap
