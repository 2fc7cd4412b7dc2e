#include "ruby/frame_reader.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>

namespace memprof::ruby {

void FrameReader::read_some(int idle_ms) noexcept {
  while (!complete() && !too_big_) {
    char buffer[16384];
    bool body = header_done();
    size_t want = body ? std::min(sizeof buffer, announced_ - data_.size())
                       : sizeof header_ - header_read_;
    char* into = body ? buffer : reinterpret_cast<char*>(header_) + header_read_;
    if (idle_ms >= 0) {
      pollfd readable{fd_, POLLIN, 0};
      int ready = ::poll(&readable, 1, idle_ms);
      if (ready <= 0) {
        error_ = ready == 0 ? ETIMEDOUT : errno;
        return;
      }
    }
    ssize_t n = ::read(fd_, into, want);
    if (n < 0) {
      error_ = errno;
      return;
    }
    if (n == 0) return;  // end of file
    if (body) {
      try {
        data_.append(buffer, static_cast<size_t>(n));
      } catch (...) {
        error_ = ENOMEM;
        return;
      }
      continue;
    }
    header_read_ += static_cast<size_t>(n);
    if (!header_done()) continue;
    announced_ = util::decode_frame_length(header_);
    too_big_ = announced_ > max_bytes_;
  }
}

}  // namespace memprof::ruby
