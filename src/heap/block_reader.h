// Cuts a ByteSource into blocks of whole lines (a few MB each) that can be parsed
// independently: each block ends at a '\n' (or at the end of the input) and carries
// kLinePadding spare bytes for simdjson. A line longer than the block size grows its block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/util/huge_page_allocator.h"
#include "core/util/result.h"
#include "heap/byte_source.h"

namespace memprof::heap {

class BlockReader {
 public:
  // `name`: the input's, for errors.
  BlockReader(ByteSource& source, size_t block_size, std::string name)
      : source_(source), block_size_(block_size), name_(std::move(name)) {}

  // Fills `block` (resized as needed, capacity = block.size()) with the next lines; `size` is
  // their byte count. false at the end of the input.
  Result<bool> next(BigVector<char>& block, size_t& size);
  bool at_end() const { return eof_ && carry_.empty(); }
  uint64_t bytes_read() const { return bytes_read_; }
  // Whether the input's last byte is not a '\n' (Ruby ends every line with one).
  bool ends_mid_line() const { return last_byte_ != '\n' && bytes_read_ > 0; }

 private:
  ByteSource& source_;
  size_t block_size_;
  std::string name_;
  std::vector<char> carry_;  // the partial line after the previous block's last '\n'
  bool eof_ = false;
  uint64_t bytes_read_ = 0;
  char last_byte_ = 0;
};

}  // namespace memprof::heap
