#include "inject/target_libc.h"

#include <elf.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <span>

#include "core/proc/remote_memory.h"
#include "core/util/path_name.h"

namespace memprof::inject {

namespace {

// __RTLD_DLOPEN (glibc's include/dlfcn.h): __libc_dlopen_mode's callers set it to get dlopen's
// behaviour (e.g. the namespace of the caller instead of the base one).
constexpr uint64_t kRtldDlopen = 0x80000000;

ObjectRanges ranges_of(const proc::LoadedObject& object) {
  ObjectRanges ranges{object.path, {}};
  for (const auto& segment : object.segments) {
    if (segment.type != PT_LOAD) continue;
    uint64_t start = object.load_bias + segment.vaddr;
    ranges.ranges.push_back({start, start + segment.memsz});
  }
  return ranges;
}

// The address of a function called `name` (preferring its default version: libc.so.6 has both
// dlopen@@GLIBC_2.34 and the compatibility dlopen@GLIBC_2.2.5), or 0.
uint64_t function_address(const elf::ObjectSymbols& symbols, std::string_view name) {
  const elf::ObjectSymbols::Entry* best = nullptr;
  for (const auto* entry : symbols.find(name)) {
    // An IFUNC's address is its resolver, not the function: never call it.
    if (entry->type != STT_FUNC) continue;
    if (best == nullptr || (entry->default_version && !best->default_version)) best = entry;
  }
  return best == nullptr ? 0 : best->address;
}

const proc::LoadedObject* find_object(const std::vector<proc::LoadedObject>& objects,
                                      bool (*matches)(std::string_view)) {
  auto it = std::find_if(objects.begin(), objects.end(), [&](const proc::LoadedObject& object) {
    return !object.is_vdso && !object.is_main && matches(object.path);
  });
  return it == objects.end() ? nullptr : &*it;
}

bool is_libdl_path(std::string_view path) { return file_name_of(path).starts_with("libdl."); }

// The signal trampoline every libc installs as sa_restorer: `mov $15, %rax; syscall` (glibc's
// __restore_rt) or `mov $15, %eax; syscall` (musl's). It is not exported; its bytes are found in
// libc's executable segments, as mapped in the target. Any occurrence decodes the same way.
AddressRange find_sigreturn_trampoline(pid_t pid, const proc::LoadedObject& libc) {
  static constexpr std::array<unsigned char, 9> kGlibc = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
                                                          0x00, 0x00, 0x0f, 0x05};
  static constexpr std::array<unsigned char, 7> kMusl = {0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  const proc::RemoteMemory memory(pid);
  for (const auto& segment : libc.segments) {
    if (segment.type != PT_LOAD || (segment.flags & PF_X) == 0 || segment.memsz == 0) continue;
    std::vector<unsigned char> text(segment.memsz);
    if (!memory.read(libc.load_bias + segment.vaddr, text).ok()) continue;
    for (const auto& pattern : {std::span<const unsigned char>(kGlibc), std::span<const unsigned char>(kMusl)}) {
      auto found = std::search(text.begin(), text.end(), pattern.begin(), pattern.end());
      if (found != text.end()) {
        const uint64_t start = libc.load_bias + segment.vaddr + (found - text.begin());
        return {start, start + pattern.size()};
      }
    }
  }
  return {};
}

}  // namespace

bool ObjectRanges::contains(uint64_t address) const {
  return std::any_of(ranges.begin(), ranges.end(),
                     [&](const AddressRange& range) { return range.contains(address); });
}

bool is_libc_path(std::string_view path) {
  std::string_view name = file_name_of(path);
  return name.starts_with("libc.so") || name.starts_with("libc.musl") ||
         (name.starts_with("libc-") && name.ends_with(".so"));
}

bool is_loader_path(std::string_view path) {
  std::string_view name = file_name_of(path);
  return name.starts_with("ld-linux") || name.starts_with("ld-musl") ||
         (name.starts_with("ld-") && name.ends_with(".so"));
}

std::string TargetLibc::describe(uint64_t address) const {
  if (libc.contains(address)) {
    std::string_view name = file_name_of(libc.path);
    if (libc_symbols) {
      if (auto match = libc_symbols->find_address(address - libc_bias)) {
        return fmt::format("{}+{:#x} in {}", match->symbol->name, match->offset, name);
      }
    }
    return fmt::format("{:#x} in {}", address, name);
  }
  if (loader.contains(address)) return fmt::format("{:#x} in {}", address, file_name_of(loader.path));
  return fmt::format("{:#x}", address);
}

Error statically_linked_error(pid_t pid) {
  return err("process {} has no libc.so loaded (it is statically linked), so memprof cannot load "
             "a library into it; link the program dynamically", pid);
}

Result<TargetLibc> find_target_libc(pid_t pid, const std::vector<proc::LoadedObject>& objects) {
  const proc::LoadedObject* libc = find_object(objects, is_libc_path);
  if (libc == nullptr) {
    return statically_linked_error(pid);
  }
  TargetLibc target;
  target.libc = ranges_of(*libc);
  if (const auto* loader = find_object(objects, is_loader_path)) target.loader = ranges_of(*loader);
  target.libc_bias = libc->load_bias;

  // Through /proc/PID/root (the target may have mounts of its own), or map_files for a file
  // deleted since it was mapped (LoadedObject::file).
  auto load_symbols = [&](const proc::LoadedObject& object) {
    return elf::ObjectSymbols::load(object.file, /*use_debug_files=*/false);
  };
  auto libc_symbols = load_symbols(*libc);
  if (!libc_symbols && libc->file.find("/map_files/") != std::string::npos)
    return err("process {}: its C library {} was deleted since it was loaded (an upgrade?), and its "
               "mapped copy cannot be read ({}): run memprof as root, or restart the process",
               pid, libc->path, libc_symbols.message());
  if (!libc_symbols) {
    return err("process {}: cannot read the symbols of its C library: {}", pid,
               libc_symbols.message());
  }
  target.libc_symbols = std::make_shared<const elf::ObjectSymbols>(std::move(*libc_symbols));
  const AddressRange trampoline = find_sigreturn_trampoline(pid, *libc);
  target.sigreturn_trampoline = trampoline.start;
  target.sigreturn_trampoline_end = trampoline.end;
  if (uint64_t mmap = function_address(*target.libc_symbols, "mmap")) {
    target.mmap = libc->load_bias + mmap;
  }
  if (uint64_t munmap = function_address(*target.libc_symbols, "munmap")) {
    target.munmap = libc->load_bias + munmap;
  }

  // glibc >= 2.34 (and musl) export dlopen from libc itself.
  if (uint64_t dlopen = function_address(*target.libc_symbols, "dlopen")) {
    target.dlopen_name = "dlopen";
    target.dlopen = libc->load_bias + dlopen;
    if (uint64_t dlerror = function_address(*target.libc_symbols, "dlerror")) {
      target.dlerror = libc->load_bias + dlerror;
    }
    if (uint64_t dlsym = function_address(*target.libc_symbols, "dlsym")) {
      target.dlsym = libc->load_bias + dlsym;
    }
    return target;
  }
  // Older glibc: libdl's dlopen when the program loaded libdl, else libc's private entry point.
  if (const auto* libdl = find_object(objects, is_libdl_path)) {
    if (auto symbols = load_symbols(*libdl)) {
      if (uint64_t dlopen = function_address(*symbols, "dlopen")) {
        target.dlopen_name = "dlopen";
        target.dlopen = libdl->load_bias + dlopen;
        if (uint64_t dlerror = function_address(*symbols, "dlerror")) {
          target.dlerror = libdl->load_bias + dlerror;
        }
        if (uint64_t dlsym = function_address(*symbols, "dlsym")) {
          target.dlsym = libdl->load_bias + dlsym;
        }
        return target;
      }
    }
  }
  if (uint64_t mode = function_address(*target.libc_symbols, "__libc_dlopen_mode")) {
    target.dlopen_name = "__libc_dlopen_mode";
    target.dlopen = libc->load_bias + mode;
    target.dlopen_extra_flags = kRtldDlopen;
    return target;
  }
  return err("process {}: its C library {} exports neither dlopen nor __libc_dlopen_mode, so "
             "memprof cannot load a library into it", pid, libc->path);
}

}  // namespace memprof::inject
