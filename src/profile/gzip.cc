#include "profile/gzip.h"

#include <algorithm>
#include <limits>

#include "core/util/zlib_library.h"

namespace memprof::profile {
namespace {

// deflateInit2's windowBits: 15 (a 32 KB window) + 16 for a gzip header and trailer instead of
// zlib's.
constexpr int kGzipWindowBits = 15 + 16;
constexpr int kMemoryLevel = 8;  // zlib's default

}  // namespace

Result<std::string> gzip_compress(std::string_view data) {
  const Result<ZlibLibrary>& zlib = ZlibLibrary::get();
  if (!zlib) return err("gzip: {}", zlib.message());
  z_stream stream{};
  if (deflate_init2(*zlib, &stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindowBits, kMemoryLevel,
                    Z_DEFAULT_STRATEGY) != Z_OK) {
    return err("gzip: {}", stream.msg ? stream.msg : "cannot start the compressor");
  }
  std::string out(zlib->deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  // zlib counts in uInt (32 bits): feed and drain larger buffers in pieces.
  constexpr size_t kMaxPiece = std::numeric_limits<uInt>::max();
  size_t in_left = data.size();
  int rc = Z_OK;
  while (rc == Z_OK) {
    const size_t in_piece = std::min(in_left, kMaxPiece);
    stream.avail_in = static_cast<uInt>(in_piece);
    stream.avail_out = static_cast<uInt>(std::min(out.size() - stream.total_out, kMaxPiece));
    rc = zlib->deflate(&stream, in_piece == in_left ? Z_FINISH : Z_NO_FLUSH);
    in_left -= in_piece - stream.avail_in;
  }
  const std::string message = stream.msg ? stream.msg : "deflate failed";
  zlib->deflateEnd(&stream);
  if (rc != Z_STREAM_END) return err("gzip: {}", message);
  out.resize(stream.total_out);
  return out;
}

}  // namespace memprof::profile
