#include "test_support.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "core/elf/elf_file.h"
#include "core/util/proc_maps.h"

// Nothing here uses the hook engine: the oracles must not share its reading of the loaded
// objects, and a program that tests the engine loaded from a library (got_agent_test.cc) links
// this file without containing the engine.
namespace memprof::hook::testing {
namespace {

struct LoadedImage {
  std::string path;  // the loader's name; the main program's is /proc/self/exe resolved
  uintptr_t bias = 0;
  std::vector<Elf64_Phdr> loads;  // PT_LOAD headers
};

std::vector<LoadedImage> loaded_images() {
  std::vector<LoadedImage> images;
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        auto& list = *static_cast<std::vector<LoadedImage>*>(out);
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        LoadedImage image{list.empty() ? program_path() : name, info->dlpi_addr, {}};
        for (size_t i = 0; i < info->dlpi_phnum; ++i)
          if (info->dlpi_phdr[i].p_type == PT_LOAD) image.loads.push_back(info->dlpi_phdr[i]);
        list.push_back(std::move(image));
        return 0;
      },
      &images);
  return images;
}

}  // namespace

int protection_of(const void* address) {
  auto maps = read_self_maps();
  const MapEntry* mapping = maps.ok() ? find_mapping(*maps, reinterpret_cast<uintptr_t>(address)) : nullptr;
  return mapping ? mapping->protection() : -1;
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
  for (const auto& image : loaded_images()) {
    if (!image.path.ends_with(suffix)) continue;
    for (const auto& load : image.loads)
      if (!(load.p_flags & PF_X)) result.push_back(snapshot(image.bias + load.p_vaddr, load.p_memsz));
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
  for (const auto& image : loaded_images()) {
    if (!image.path.ends_with(suffix)) continue;
    auto file = elf::ElfFile::open(image.path);
    if (!file.ok()) return slots;
    auto relocations = file->relocations();
    if (!relocations.ok()) return slots;
    for (const auto& r : *relocations)
      if ((r.type == R_X86_64_JUMP_SLOT || r.type == R_X86_64_GLOB_DAT) && r.symbol_name == symbol)
        slots.push_back(reinterpret_cast<void**>(image.bias + r.offset));
  }
  return slots;
}

std::vector<uint8_t> got_bytes(std::string_view suffix) {
  std::vector<uint8_t> bytes;
  for (const auto& image : loaded_images()) {
    if (!image.path.ends_with(suffix)) continue;
    auto file = elf::ElfFile::open(image.path);
    if (!file.ok()) return bytes;
    for (const auto& section : file->sections()) {
      if (section.name != ".got" && section.name != ".got.plt") continue;
      auto start = reinterpret_cast<const uint8_t*>(image.bias + section.addr);
      bytes.insert(bytes.end(), start, start + section.size);
    }
  }
  return bytes;
}

void* open_library(const char* path, std::string* error) {
  void* handle = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr && error) *error = ::dlerror();
  return handle;
}

}  // namespace memprof::hook::testing
