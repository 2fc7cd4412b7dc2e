#include "test_support.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "core/elf/elf_file.h"
#include "core/hook/loaded_object.h"
#include "core/hook/patch.h"

namespace memprof::hook::testing {

int protection_of(const void* address) {
  auto protection = page_protection(address);
  return protection.ok() ? *protection : -1;
}

Snapshot snapshot(uintptr_t start, size_t size) {
  Snapshot s;
  s.start = start;
  s.bytes.assign(reinterpret_cast<const uint8_t*>(start),
                 reinterpret_cast<const uint8_t*>(start) + size);
  auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  for (uintptr_t p = start & ~(page - 1); p < start + size; p += page)
    s.protections.push_back(protection_of(reinterpret_cast<const void*>(p)));
  return s;
}

std::vector<Snapshot> data_segments(std::string_view suffix) {
  std::vector<Snapshot> result;
  auto objects = loaded_objects();
  if (!objects.ok()) return result;
  for (const auto& object : *objects) {
    if (!object.path.ends_with(suffix)) continue;
    for (const auto& segment : object.segments)
      if (!(segment.flags & PF_X)) result.push_back(snapshot(segment.start, segment.end - segment.start));
  }
  return result;
}

std::string base_name(std::string_view path) {
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string program_path() {
  char buffer[4096];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

std::vector<void**> got_slots_from_file(std::string_view suffix, std::string_view symbol) {
  std::vector<void**> slots;
  auto objects = loaded_objects();
  if (!objects.ok()) return slots;
  for (const auto& object : *objects) {
    if (!object.path.ends_with(suffix)) continue;
    auto file = elf::ElfFile::open(object.path);
    if (!file.ok()) return slots;
    auto relocations = file->relocations();
    if (!relocations.ok()) return slots;
    for (const auto& r : *relocations)
      if ((r.type == R_X86_64_JUMP_SLOT || r.type == R_X86_64_GLOB_DAT) && r.symbol_name == symbol)
        slots.push_back(reinterpret_cast<void**>(object.bias + r.offset));
  }
  return slots;
}

void* open_library(const char* path, std::string* error) {
  void* handle = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr && error) *error = ::dlerror();
  return handle;
}

}  // namespace memprof::hook::testing
