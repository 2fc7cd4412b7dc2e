#include "heap/line_reader.h"

#include <simdjson.h>

#include <cstring>

namespace memprof::heap {

static_assert(kLinePadding == simdjson::SIMDJSON_PADDING);

LineReader::LineReader(ByteSource& source, size_t chunk_size)
    : source_(source), buffer_(chunk_size + kLinePadding) {}

Result<bool> LineReader::next(Line& line) {
  for (;;) {
    const char* start = buffer_.data() + begin_;
    size_t available = end_ - begin_;
    const void* newline = available > scanned_
                              ? std::memchr(start + scanned_, '\n', available - scanned_)
                              : nullptr;
    size_t length;
    if (newline != nullptr) {
      length = static_cast<size_t>(static_cast<const char*>(newline) - start);
      begin_ += length + 1;
    } else if (eof_) {
      if (available == 0) return false;
      length = available;  // last line without '\n'
      begin_ = end_;
    } else {
      scanned_ = available;
      MEMPROF_TRY_STATUS(fill());
      continue;
    }
    scanned_ = 0;
    if (length > 0 && start[length - 1] == '\r') --length;
    line.data = start;
    line.size = length;
    line.capacity = static_cast<size_t>(buffer_.data() + buffer_.size() - start);
    line.number = ++line_number_;
    return true;
  }
}

// Moves the partial line to the front, grows the buffer when that line fills it, and reads more.
Status LineReader::fill() {
  size_t partial = end_ - begin_;
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, partial);
    begin_ = 0;
    end_ = partial;
  }
  size_t usable = buffer_.size() - kLinePadding;
  if (end_ == usable) {
    buffer_.resize(usable * 2 + kLinePadding);
    usable = buffer_.size() - kLinePadding;
  }
  MEMPROF_TRY(n, source_.read({buffer_.data() + end_, usable - end_}));
  if (n == 0) eof_ = true;
  end_ += n;
  bytes_read_ += n;
  return ok_status();
}

}  // namespace memprof::heap
