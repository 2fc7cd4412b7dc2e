// The entry hooks the agent puts on libc's own functions while a recording runs (the exec and
// exit watches): found by name, written while the other threads are parked, the original
// published for the replacement to call.
#pragma once

#include <dlfcn.h>

#include <memory>

#include "core/hook/entry_hook.h"
#include "core/util/result.h"

namespace memprof::agent {

inline Result<std::unique_ptr<hook::EntryHook>> hook_libc_entry(const char* name, void* replacement,
                                                                void** original, const char* owner) {
  void* function = ::dlsym(RTLD_DEFAULT, name);
  if (function == nullptr) return err("{} not found", name);
  return hook::EntryHook::install(function, replacement,
                                  {.park_threads = true, .publish_original = original, .owner = owner});
}

}  // namespace memprof::agent
