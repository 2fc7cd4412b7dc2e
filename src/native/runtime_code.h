// The code of the C and C++ runtime: libc, the dynamic loader and libstdc++. An allocation
// made inside it (strdup, asprintf, getline, fopen, opendir, pthread_create, dlopen, a
// std::string built by libstdc++'s own code) is the doing of whoever called the runtime, so its
// site is the first frame outside it: "which library leaks" never answers libc.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memprof::native {

class RuntimeCode {
 public:
  // The executable segments of the runtime objects loaded now (by file name: libc.so.*,
  // ld-linux*, libstdc++.so.*). A libstdc++ loaded later is not among them.
  static RuntimeCode find() noexcept;

  bool contains(uintptr_t address) const noexcept {
    for (size_t i = 0; i < count_; ++i)
      if (address - ranges_[i].start < ranges_[i].size) return true;
    return false;
  }

 private:
  struct Range {
    uintptr_t start;
    uintptr_t size;
  };
  static constexpr size_t kMaxRanges = 8;  // one executable segment per object, in practice
  Range ranges_[kMaxRanges] = {};
  size_t count_ = 0;
};

}  // namespace memprof::native
