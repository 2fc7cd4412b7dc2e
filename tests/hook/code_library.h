// One of the libhook_code_* fixtures opened with dlopen (they export the same names), and typed
// access to its functions: the hidden targets by address, the exported callers by dlsym.
#pragma once

#include <dlfcn.h>

#include <string>

#include "test_support.h"

namespace memprof::hook::testing {

class CodeLibrary {
 public:
  explicit CodeLibrary(const char* path) : handle_(open_library(path, &error_)) {
    if (handle_ == nullptr) return;
    address_ = reinterpret_cast<void* (*)(const char*)>(::dlsym(handle_, "code_address"));
    three_calls = reinterpret_cast<int (*)(int)>(::dlsym(handle_, "code_three_calls"));
    call_plus_bias = reinterpret_cast<int (*)(int)>(::dlsym(handle_, "code_call_plus_bias"));
    straddling_calls = reinterpret_cast<int (*)(int)>(::dlsym(handle_, "code_straddling_calls"));
    square_calls = reinterpret_cast<unsigned long (*)()>(::dlsym(handle_, "code_square_calls"));
    plus_bias_calls = reinterpret_cast<unsigned long (*)()>(::dlsym(handle_, "code_plus_bias_calls"));
    probe_return_address = reinterpret_cast<void* (*)()>(::dlsym(handle_, "code_probe_return_address"));
    probe_frames = reinterpret_cast<int (*)(void***)>(::dlsym(handle_, "code_probe_frames"));
  }
  ~CodeLibrary() {
    if (handle_) ::dlclose(handle_);
  }
  CodeLibrary(const CodeLibrary&) = delete;
  CodeLibrary& operator=(const CodeLibrary&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  void* address(const char* name) const { return address_(name); }
  template <typename Fn>
  Fn* function(const char* name) const {
    return reinterpret_cast<Fn*>(address(name));
  }

  int (*three_calls)(int) = nullptr;
  int (*call_plus_bias)(int) = nullptr;
  int (*straddling_calls)(int) = nullptr;  // three calls whose displacements cross 16-byte blocks
  unsigned long (*square_calls)() = nullptr;
  unsigned long (*plus_bias_calls)() = nullptr;
  // What code_probe (called by code_call_first_probe) saw: where it returns, and the frames an
  // unwinder found above it.
  void* (*probe_return_address)() = nullptr;
  int (*probe_frames)(void*** frames) = nullptr;

 private:
  std::string error_;
  void* handle_ = nullptr;
  void* (*address_)(const char*) = nullptr;
};

}  // namespace memprof::hook::testing
