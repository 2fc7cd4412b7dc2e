// Numbers as people read them in text reports: "1,234,567" objects, "12.3 MB".
#pragma once

#include <cstdint>
#include <string>

namespace memprof::heap {

// 1234567 -> "1,234,567".
std::string count_text(uint64_t count);
// A count and its noun: (1, "block", "blocks") -> "1 block", (2048, ...) -> "2,048 blocks".
std::string counted_text(uint64_t count, const char* one, const char* many);
// An exact number of bytes: 1 -> "1 byte", 5248 -> "5,248 bytes".
std::string byte_count_text(uint64_t bytes);
// Bytes in SI units with one decimal: 999 -> "999 B", 12345 -> "12.3 kB", 12345678 -> "12.3 MB".
std::string bytes_text(uint64_t bytes);

}  // namespace memprof::heap
