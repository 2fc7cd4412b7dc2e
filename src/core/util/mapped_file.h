// A whole file mapped read-only, for parsers that want a byte span (ELF files, heap dumps).
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "core/util/result.h"
#include "core/util/scoped_fd.h"

namespace memprof {

class MappedFile {
 public:
  // Fails with "PATH: <strerror>" for a missing or unreadable file. An empty file maps to an
  // empty span (mmap refuses length 0).
  static Result<MappedFile> open(const std::string& path);

  std::span<const unsigned char> bytes() const {
    return {map_.valid() ? map_.bytes() : nullptr, size_};
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  ScopedMmap map_;
  size_t size_ = 0;
};

}  // namespace memprof
