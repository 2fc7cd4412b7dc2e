#include "native/stack_unwinder.h"

#include <dlfcn.h>
#include <execinfo.h>

#include <algorithm>
#include <mutex>

namespace memprof::native {
namespace {

// Frames of the engine itself between unw_backtrace and the allocator's caller (capture, the
// engine's site lookup, the record step, the replacement): skipped by finding `caller`.
constexpr int kOwnFramesAtMost = 8;

}  // namespace

Result<StackUnwinder> StackUnwinder::open() {
  static std::once_flag once;
  static void* backtrace = nullptr;
  static std::string problem;
  std::call_once(once, [] {
    void* library = ::dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = ::dlerror();
      problem = fmt::format("stacks need libunwind.so.8 (Debian: apt install libunwind8): {}",
                            why != nullptr ? why : "not found");
      return;
    }
    backtrace = ::dlsym(library, "unw_backtrace");
    if (backtrace == nullptr) problem = "stacks: libunwind.so.8 has no unw_backtrace";
  });
  if (backtrace == nullptr) return err("{}", problem);
  return StackUnwinder(reinterpret_cast<Backtrace>(backtrace));
}

Result<StackUnwinder> StackUnwinder::open_any() {
  auto unwinder = open();
  if (!unwinder.ok()) unwinder = StackUnwinder(&::backtrace);
  // The first call loads and sets up the unwinder (glibc's dlopens libgcc_s): not in a hook.
  void* frames[4];
  if (unwinder->backtrace_(frames, 4) <= 0) return err("native: no stack unwinder works in this process");
  return unwinder;
}

uint32_t StackUnwinder::capture(uintptr_t caller, uintptr_t* frames, uint32_t max_depth) const noexcept {
  frames[0] = caller;
  void* buffer[kMaxFrames + kOwnFramesAtMost];
  int count = backtrace_(buffer, static_cast<int>(std::min(max_depth, kMaxFrames)) + kOwnFramesAtMost);
  for (int i = 0; i < count && i < kOwnFramesAtMost + 1; ++i) {
    if (reinterpret_cast<uintptr_t>(buffer[i]) != caller) continue;
    uint32_t depth = std::min<uint32_t>(static_cast<uint32_t>(count - i), max_depth);
    for (uint32_t j = 1; j < depth; ++j) frames[j] = reinterpret_cast<uintptr_t>(buffer[i + j]);
    return depth;
  }
  return 1;  // the caller was not found among the first frames: keep the one we know
}

}  // namespace memprof::native
