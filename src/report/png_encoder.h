// PNG encoding of an Image with libpng, into memory: the same bytes go to a file (heapmap) or into
// a data: URI (the HTML report).
#pragma once

#include <cstdint>
#include <vector>

#include "core/util/result.h"
#include "report/image.h"

namespace memprof::report {

// 8-bit RGB, non-interlaced. Fails only if libpng reports an error (e.g. out of memory or an
// image too large for PNG), with libpng's message.
Result<std::vector<uint8_t>> encode_png(const Image& image);

}  // namespace memprof::report
