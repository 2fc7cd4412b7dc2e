#include "ruby/frame_reader.h"

#include <unistd.h>

#include <algorithm>

namespace memprof::ruby {

void FrameReader::read_some() noexcept {
  while (!complete()) {
    char buffer[16384];
    size_t want = header_done_ ? std::min(sizeof buffer, wanted_ - data_.size())
                               : sizeof header_ - header_read_;
    char* into = header_done_ ? buffer : reinterpret_cast<char*>(header_) + header_read_;
    ssize_t n = ::read(fd_, into, want);
    if (n < 0) {
      error_ = errno;
      return;
    }
    if (n == 0) {
      at_end_ = true;
      return;
    }
    if (header_done_) {
      try {
        data_.append(buffer, static_cast<size_t>(n));
      } catch (...) {
        error_ = ENOMEM;
        return;
      }
      continue;
    }
    header_read_ += static_cast<size_t>(n);
    if (header_read_ < sizeof header_) continue;
    announced_ = size_t{header_[0]} | size_t{header_[1]} << 8 | size_t{header_[2]} << 16 |
                 size_t{header_[3]} << 24;
    if (announced_ > max_bytes_) {
      too_big_ = true;
      return;
    }
    header_done_ = true;
    wanted_ = announced_;
  }
}

}  // namespace memprof::ruby
