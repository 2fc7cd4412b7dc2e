#include "agent/ruby_caller.h"

#include <cstring>

#include "agent/ruby_runtime.h"

namespace memprof::agent {
namespace {

int (*g_native_thread_p)() = nullptr;
const char* (*g_sourcefile)() = nullptr;
int (*g_sourceline)() = nullptr;

}  // namespace

bool find_ruby_caller_api() {
  resolve(g_native_thread_p, "ruby_native_thread_p");
  resolve(g_sourcefile, "rb_sourcefile");
  resolve(g_sourceline, "rb_sourceline");
  return g_native_thread_p != nullptr && g_sourcefile != nullptr && g_sourceline != nullptr;
}

uint32_t ruby_caller(char* file, size_t capacity) {
  file[0] = '\0';
  if (capacity < 4 || !g_native_thread_p()) return 0;
  const char* path = g_sourcefile();
  if (path == nullptr) return 0;
  size_t length = std::strlen(path);
  if (length < capacity) {
    std::memcpy(file, path, length + 1);
  } else {
    // The end names the file: "...app/models/user.rb".
    size_t kept = capacity - 4;
    std::memcpy(file, "...", 3);
    std::memcpy(file + 3, path + length - kept, kept + 1);
  }
  int line = g_sourceline();
  return line > 0 ? static_cast<uint32_t>(line) : 0;
}

}  // namespace memprof::agent
