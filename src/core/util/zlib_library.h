// zlib's functions, from libz.so.1 opened at the first use (runtime_library.h) rather than
// linked: gzip-compressed dumps, gzip'd pprof files and the CRC of separate debug files need
// it, `memprof analyze` of a plain dump does not. Header-only: the sources of core/util are
// also compiled into the agent and the Ruby extension, which have no use for zlib.
#pragma once

#include <zlib.h>

#include "core/util/runtime_library.h"

namespace memprof {

// deflateInit2_ and inflateInit2_: what zlib.h's deflateInit2() and inflateInit2() macros call.
#define MEMPROF_ZLIB_FUNCTIONS(X) \
  X(deflateInit2_) X(deflate) X(deflateBound) X(deflateEnd) \
  X(inflateInit2_) X(inflate) X(inflateReset) X(inflateEnd) X(crc32)
MEMPROF_RUNTIME_LIBRARY(ZlibLibrary, "libz.so.1", MEMPROF_ZLIB_FUNCTIONS);

// zlib.h's deflateInit2() and inflateInit2(), macros passing the header's version.
inline int deflate_init2(const ZlibLibrary& zlib, z_stream* stream, int level, int method, int window_bits,
                         int memory_level, int strategy) {
  return zlib.deflateInit2_(stream, level, method, window_bits, memory_level, strategy, ZLIB_VERSION,
                            static_cast<int>(sizeof(z_stream)));
}
inline int inflate_init2(const ZlibLibrary& zlib, z_stream* stream, int window_bits) {
  return zlib.inflateInit2_(stream, window_bits, ZLIB_VERSION, static_cast<int>(sizeof(z_stream)));
}

}  // namespace memprof
