// Base64 (RFC 4648, with padding) for embedding the heap map PNG in the HTML report as a data: URI.
#pragma once

#include <span>
#include <string>

namespace memprof::report {

std::string base64_encode(std::span<const unsigned char> bytes);

}  // namespace memprof::report
