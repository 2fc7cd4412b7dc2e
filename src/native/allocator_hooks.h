// Entry hooks on the malloc family: every caller in every object (dlopen'ed later too, and calls
// inside libc itself, e.g. strdup) reaches the replacements, because the allocator's own first
// bytes jump to them. The function hooked is the one dlsym(RTLD_DEFAULT, name) finds (libc's,
// or a preloaded allocator's). Names that are aliases of an already hooked function (glibc
// 2.36: aligned_alloc is memalign) are hooked once.
//
// The call site is __builtin_return_address(0) in the replacement: the patched entry jumps
// (jmp rel32 to a thunk, which jumps to the replacement), so the replacement runs on the
// caller's frame with the caller's return address on top of the stack. A caller that reaches
// malloc by a tail call (jmp) is charged to its own caller.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/hook/entry_hook.h"
#include "core/util/result.h"

namespace memprof::native {

struct HookedAllocator {
  std::string name;
  uintptr_t address = 0;
  std::string alias_of;  // set when the address was already hooked under this name
};

class AllocatorHooks {
 public:
  // Installs them all under one parking of the other threads, and removes them allocating
  // functions first and free last, so that every block recorded is also seen when it is
  // freed. Fails when malloc, free or realloc cannot be hooked; the others are reported in
  // `problems`.
  // `track_mmap` adds munmap (first), mremap and mmap (last).
  static Result<std::unique_ptr<AllocatorHooks>> install(std::vector<std::string>& problems, bool track_mmap);
  ~AllocatorHooks();  // every patched byte restored; calls in flight finish in the originals
  AllocatorHooks(const AllocatorHooks&) = delete;
  AllocatorHooks& operator=(const AllocatorHooks&) = delete;

  const std::vector<HookedAllocator>& hooked() const { return hooked_; }

 private:
  AllocatorHooks() = default;
  std::vector<std::unique_ptr<hook::EntryHook>> hooks_;  // in installation order
  std::vector<HookedAllocator> hooked_;
};

}  // namespace memprof::native
