// RAII owners for kernel handles: a file descriptor and a memory mapping.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <utility>

namespace memprof {

class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

class ScopedMmap {
 public:
  ScopedMmap() = default;
  ScopedMmap(void* addr, size_t size) : addr_(addr), size_(size) {}
  ScopedMmap(ScopedMmap&& other) noexcept
      : addr_(std::exchange(other.addr_, MAP_FAILED)), size_(std::exchange(other.size_, 0)) {}
  ScopedMmap& operator=(ScopedMmap&& other) noexcept {
    if (this != &other) {
      reset();
      addr_ = std::exchange(other.addr_, MAP_FAILED);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ScopedMmap(const ScopedMmap&) = delete;
  ScopedMmap& operator=(const ScopedMmap&) = delete;
  ~ScopedMmap() { reset(); }

  bool valid() const { return addr_ != MAP_FAILED; }
  void* data() const { return addr_; }
  const unsigned char* bytes() const { return static_cast<const unsigned char*>(addr_); }
  size_t size() const { return size_; }
  // Gives up ownership: the mapping stays for the life of the process (e.g. code that other
  // threads may still be executing).
  void* release() {
    size_ = 0;
    return std::exchange(addr_, MAP_FAILED);
  }
  void reset() {
    if (addr_ != MAP_FAILED && size_ != 0) ::munmap(addr_, size_);
    addr_ = MAP_FAILED;
    size_ = 0;
  }

 private:
  void* addr_ = MAP_FAILED;
  size_t size_ = 0;
};

}  // namespace memprof
