// What the injector needs to know about the target's C library and dynamic loader: where dlopen
// and dlerror are (in the target's address space, from its loaded objects and the libraries' ELF
// symbols, never from this process's addresses) and which address ranges belong to libc and to
// the loader (a thread stopped there may hold the malloc or the loader lock).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/elf/object_symbols.h"
#include "core/proc/loaded_objects.h"
#include "core/util/result.h"

namespace memprof::inject {

struct AddressRange {
  uint64_t start = 0;
  uint64_t end = 0;
  bool contains(uint64_t address) const { return address >= start && address < end; }
};

// A loaded object's PT_LOAD ranges at runtime addresses.
struct ObjectRanges {
  std::string path;
  std::vector<AddressRange> ranges;
  bool contains(uint64_t address) const;
};

struct TargetLibc {
  ObjectRanges libc;
  ObjectRanges loader;
  // dlopen, or on glibc < 2.34 without libdl loaded, __libc_dlopen_mode.
  std::string dlopen_name;
  uint64_t dlopen = 0;
  // Added to RTLD_NOW: __libc_dlopen_mode wants __RTLD_DLOPEN to behave like dlopen.
  uint64_t dlopen_extra_flags = 0;
  uint64_t dlerror = 0;  // 0 when the target has none (glibc < 2.34 without libdl)
  uint64_t dlsym = 0;    // likewise
  // Where a thread can return to put itself back (signal_frame.h): libc's rt_sigreturn
  // trampoline, and what maps the page of memprof's own return path. 0 when not found.
  uint64_t sigreturn_trampoline = 0;
  uint64_t sigreturn_trampoline_end = 0;  // just after its syscall instruction
  uint64_t mmap = 0;
  uint64_t munmap = 0;
  std::shared_ptr<const elf::ObjectSymbols> libc_symbols;
  uint64_t libc_bias = 0;

  // "malloc+0x42 in libc.so.6", "ld-linux-x86-64.so.2+0x1234", or "0x55d0c0de1234".
  std::string describe(uint64_t address) const;
};

// glibc's libc.so.6 (older layouts: libc-2.31.so), musl's libc.musl-*.so.1.
bool is_libc_path(std::string_view path);
// ld-linux-x86-64.so.2, ld-2.31.so, ld-musl-*.so.1.
bool is_loader_path(std::string_view path);

// "process N has no libc.so loaded (it is statically linked), ...": shared by the preflight check.
Error statically_linked_error(pid_t pid);

// From objects already enumerated (see proc::process_objects). Statically linked targets have no
// libc.so and get an error saying so.
Result<TargetLibc> find_target_libc(pid_t pid, const std::vector<proc::LoadedObject>& objects);

}  // namespace memprof::inject
