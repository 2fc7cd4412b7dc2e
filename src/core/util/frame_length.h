// The length prefix of memprof's frames: 4 bytes, little-endian. The agent's socket protocol
// (src/agent/protocol.h) and the pipe to its Ruby thread (src/ruby/frame_reader.h, and
// lib/memprof/agent.rb's pack("V")) use the same framing.
#pragma once

#include <array>
#include <cstdint>

namespace memprof::util {

inline constexpr size_t kFrameLengthBytes = 4;

inline std::array<unsigned char, kFrameLengthBytes> encode_frame_length(uint32_t length) {
  return {static_cast<unsigned char>(length), static_cast<unsigned char>(length >> 8),
          static_cast<unsigned char>(length >> 16), static_cast<unsigned char>(length >> 24)};
}

inline uint32_t decode_frame_length(const unsigned char (&bytes)[kFrameLengthBytes]) {
  return bytes[0] | (bytes[1] << 8) | (bytes[2] << 16) | (static_cast<uint32_t>(bytes[3]) << 24);
}

}  // namespace memprof::util
