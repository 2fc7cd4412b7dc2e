// gzip compression of a finished file's bytes, in memory (pprof files are gzip-compressed
// profile.proto messages).
#pragma once

#include <string>
#include <string_view>

#include "core/util/result.h"

namespace memprof::profile {

// A gzip stream (RFC 1952: header, deflate, CRC-32 and length) of `data`. Fails only when zlib
// does ("gzip: <zlib's message>").
Result<std::string> gzip_compress(std::string_view data);

}  // namespace memprof::profile
