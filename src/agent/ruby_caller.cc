#include "agent/ruby_caller.h"

#include <cstring>

#include "agent/blocking_region_lines.h"
#include "agent/ruby_runtime.h"
#include "agent/ruby_vm_end_watch.h"

namespace memprof::agent {
namespace {

const uintptr_t* g_object_class = nullptr;  // rb_cObject: set once the VM and its frames exist
int (*g_has_gvl)() = nullptr;
int (*g_native_thread_p)() = nullptr;
int (*g_during_gc)() = nullptr;
const char* (*g_sourcefile)() = nullptr;
int (*g_sourceline)() = nullptr;

constexpr const char* kGarbageCollection = "(garbage collection)";
constexpr const char* kWithoutGvl = "(without the GVL)";

}  // namespace

bool find_ruby_caller_api() {
  resolve(g_object_class, "rb_cObject");
  resolve(g_has_gvl, "ruby_thread_has_gvl_p");
  resolve(g_native_thread_p, "ruby_native_thread_p");
  resolve(g_during_gc, "rb_during_gc");
  resolve(g_sourcefile, "rb_sourcefile");
  resolve(g_sourceline, "rb_sourceline");
  return g_object_class != nullptr && g_has_gvl != nullptr && g_native_thread_p != nullptr &&
         g_during_gc != nullptr && g_sourcefile != nullptr && g_sourceline != nullptr;
}

namespace {

// The calling thread holds the GVL: its frames are read, unless a GC is moving them.
bool read_frames(const char** path, uint32_t* line) noexcept {
  if (g_during_gc()) {
    *path = kGarbageCollection;
    *line = 0;
    return true;
  }
  const char* file = g_sourcefile();
  if (file == nullptr) return false;
  int number = g_sourceline();
  *path = file;
  *line = number > 0 ? static_cast<uint32_t>(number) : 0;
  return true;
}

// Before the VM's boot has made its first frames (a launched `ruby` held at its first
// instruction), the execution context is half set up: nothing to read. After the VM's end, the
// context is freed memory (ruby_vm_end_watch.h).
bool frames_exist() noexcept {
  return __atomic_load_n(g_object_class, __ATOMIC_ACQUIRE) != 0 && !ruby_vm_ended();
}

// `path` copied into `file` (cut at the front when longer); the line, or 0 when none.
uint32_t copy_location(bool found, const char* path, uint32_t line, char* file, size_t capacity) {
  file[0] = '\0';
  if (!found || capacity < 4) return 0;
  size_t length = std::strlen(path);
  if (length < capacity) {
    std::memcpy(file, path, length + 1);
  } else {
    // The end names the file: "...app/models/user.rb".
    size_t kept = capacity - 4;
    std::memcpy(file, "...", 3);
    std::memcpy(file + 3, path + length - kept, kept + 1);
  }
  return line;
}

}  // namespace

bool ruby_location(const char** path, uint32_t* line) noexcept {
  if (!frames_exist()) return false;
  if (!g_has_gvl() || in_scheduler_wait()) {
    // A Ruby thread in a blocking region (Ruby's own reads and writes, a C extension's query
    // that lets other threads run) or waiting in Ruby's scheduler (sleep, Queue#pop, for the
    // GVL): its frames may be moved by a GC on another thread, so they are not read; the line
    // recorded when it let go of the GVL is its line (blocking_region_lines.h), or the location
    // says why it has none. A thread Ruby did not make (the timer thread, a library's own)
    // gets nothing.
    if (!g_native_thread_p()) return false;
    if (blocking_region_location(path, line)) return true;
    *path = kWithoutGvl;
    *line = 0;
    return true;
  }
  return read_frames(path, line);
}

uint32_t ruby_caller(char* file, size_t capacity) {
  const char* path = nullptr;
  uint32_t line = 0;
  const bool found = ruby_location(&path, &line);
  return copy_location(found, path, line, file, capacity);
}

uint32_t ruby_caller_holding_gvl(char* file, size_t capacity) {
  const char* path = nullptr;
  uint32_t line = 0;
  const bool found = frames_exist() && read_frames(&path, &line);
  return copy_location(found, path, line, file, capacity);
}

}  // namespace memprof::agent
