#include "heap/block_reader.h"

#include <cstring>

#include "heap/line.h"

namespace memprof::heap {

Result<bool> BlockReader::next(BigVector<char>& block, size_t& size) {
  size_t usable = std::max(block_size_, carry_.size() * 2);
  if (block.size() < usable + kLinePadding) block.resize(usable + kLinePadding);
  usable = block.size() - kLinePadding;
  if (!carry_.empty()) std::memcpy(block.data(), carry_.data(), carry_.size());  // data() may be null
  size = carry_.size();
  carry_.clear();
  size_t scanned = 0;  // bytes known to hold no '\n'
  for (;;) {
    while (!eof_ && size < usable) {
      MEMPROF_TRY(n, source_.read({block.data() + size, usable - size}));
      if (n == 0) eof_ = true;
      if (n > 0) last_byte_ = block.data()[size + n - 1];
      size += n;
      bytes_read_ += n;
    }
    if (eof_) return size > 0;
    // Cut after the last '\n'; the rest starts the next block.
    const char* data = block.data();
    for (size_t i = size; i > scanned; --i) {
      if (data[i - 1] == '\n') {
        carry_.assign(data + i, data + size);
        size = i;
        return true;
      }
    }
    scanned = size;
    // This block holds all the input read so far: its first line is the input's.
    if (bytes_read_ == size && !may_start_a_record({block.data(), size})) {
      return first_line_is_not_a_record(name_, size).error();
    }
    // One line fills the block: grow it and read on.
    block.resize(usable * 2 + kLinePadding);
    usable = block.size() - kLinePadding;
  }
}

}  // namespace memprof::heap
