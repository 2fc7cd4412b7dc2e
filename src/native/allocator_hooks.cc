#include "native/allocator_hooks.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <new>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/util/path_name.h"
#include "native/engine.h"
#include "native/recording_window.h"

namespace memprof::native {
namespace {

// The originals (the relocated prologues). Written before each hook's jump (publish_original)
// and never cleared: a thread may still be on its way into a replacement after a stop.
struct Originals {
  decltype(&::malloc) malloc;
  decltype(&::calloc) calloc;
  decltype(&::realloc) realloc;
  decltype(&::reallocarray) reallocarray;
  decltype(&::free) free;
  decltype(&::posix_memalign) posix_memalign;
  decltype(&::aligned_alloc) aligned_alloc;
  decltype(&::memalign) memalign;
  decltype(&::valloc) valloc;
  decltype(&::pvalloc) pvalloc;
  decltype(&::mmap) mmap;  // --mmap
  decltype(&::munmap) munmap;
  decltype(&::mremap) mremap;
  // libstdc++'s operator new family, by mangled name (see new_block).
  void* (*new_single)(size_t);                                                  // _Znwm
  void* (*new_array)(size_t);                                                   // _Znam
  void* (*new_single_nothrow)(size_t, const std::nothrow_t&) noexcept;          // _ZnwmRKSt9nothrow_t
  void* (*new_array_nothrow)(size_t, const std::nothrow_t&) noexcept;           // _ZnamRKSt9nothrow_t
  void* (*new_single_aligned)(size_t, std::align_val_t);                        // _ZnwmSt11align_val_t
  void* (*new_array_aligned)(size_t, std::align_val_t);                         // _ZnamSt11align_val_t
  void* (*new_single_aligned_nothrow)(size_t, std::align_val_t, const std::nothrow_t&) noexcept;
  void* (*new_array_aligned_nothrow)(size_t, std::align_val_t, const std::nothrow_t&) noexcept;
  // Ruby's allocator API, what a C extension's ALLOC, ALLOC_N, ZALLOC_N and REALLOC_N call (see
  // ruby_block).
  void* (*ruby_xmalloc)(size_t);
  void* (*ruby_xmalloc2)(size_t, size_t);
  void* (*ruby_xcalloc)(size_t, size_t);
  void* (*ruby_xrealloc)(void*, size_t);
  void* (*ruby_xrealloc2)(void*, size_t, size_t);
};
Originals g_original;

uintptr_t address_of(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer); }

// count * size, or UINT64_MAX when it overflows (the call then fails).
uint64_t product(size_t count, size_t size) {
  size_t bytes;
  return __builtin_mul_overflow(count, size, &bytes) ? UINT64_MAX : bytes;
}

// Records a block the original just returned, if a session is running.
void record_allocation(ThreadHookState& thread, void* block, uint64_t size, uintptr_t caller) {
  if (block == nullptr) return;
  if (Engine* engine = enter_recording(thread)) {
    engine->on_allocation(thread, block, size, caller);
    leave_recording(thread);
  }
}

// The replacements. Each one: nested calls (the original calling another hooked entry, e.g.
// reallocarray -> realloc) go straight to the original; otherwise call the original with the
// guard up and record the result.
#define MEMPROF_CALLER address_of(__builtin_return_address(0))

// The first allocation operator new makes is its block: it takes new's caller and size, once
// (the size asked for: libstdc++ rounds an aligned one up to its alignment). Taken before the
// original runs, so that a failed malloc inside new leaves nothing for the next allocation (the
// exception object new then throws is its own block). A request of Ruby's allocator is taken
// only by an allocation of its exact size (`bytes`, what this allocator call asks for).
void take_request(ThreadHookState& thread, uintptr_t& caller, uint64_t& size, uint64_t bytes) {
  if (thread.request_caller == 0 || (thread.request_exact && thread.request_size != bytes)) return;
  caller = std::exchange(thread.request_caller, 0);
  size = thread.request_size;
}

void* hooked_malloc(size_t size) noexcept {
  uintptr_t caller = MEMPROF_CALLER;
  ThreadHookState& thread = t_hook_state;
  if (thread.in_hook) return g_original.malloc(size);
  thread.in_hook = true;
  uint64_t recorded = size;
  take_request(thread, caller, recorded, size);
  void* block = g_original.malloc(size);
  record_allocation(thread, block, recorded, caller);
  thread.in_hook = false;
  return block;
}

void* hooked_calloc(size_t count, size_t size) noexcept {
  uintptr_t caller = MEMPROF_CALLER;
  ThreadHookState& thread = t_hook_state;
  if (thread.in_hook) return g_original.calloc(count, size);
  thread.in_hook = true;
  uint64_t recorded = product(count, size);
  take_request(thread, caller, recorded, recorded);
  void* block = g_original.calloc(count, size);
  record_allocation(thread, block, recorded, caller);  // no overflow if it succeeded
  thread.in_hook = false;
  return block;
}

template <typename Call>
void* resize(ThreadHookState& thread, void* old_block, uint64_t requested, uintptr_t caller, Call call) {
  thread.in_hook = true;
  void* block;
  if (Engine* engine = enter_recording(thread)) {
    // The window stays open across the original: the old block's record is out of the table.
    BlockRecord previous;
    bool known = engine->take_for_resize(old_block, &previous);
    block = call();
    engine->on_resized(thread, old_block, known ? &previous : nullptr, block, requested, caller);
    leave_recording(thread);
  } else {
    block = call();
  }
  thread.in_hook = false;
  return block;
}

void* hooked_realloc(void* old_block, size_t size) noexcept {
  uintptr_t caller = MEMPROF_CALLER;
  ThreadHookState& thread = t_hook_state;
  if (thread.in_hook) return g_original.realloc(old_block, size);
  uint64_t recorded = size;
  take_request(thread, caller, recorded, size);  // ruby_xrealloc's
  return resize(thread, old_block, recorded, caller, [&] { return g_original.realloc(old_block, size); });
}

void* hooked_reallocarray(void* old_block, size_t count, size_t size) noexcept {
  const uintptr_t caller = MEMPROF_CALLER;
  ThreadHookState& thread = t_hook_state;
  if (thread.in_hook) return g_original.reallocarray(old_block, count, size);
  return resize(thread, old_block, product(count, size), caller,
                [&] { return g_original.reallocarray(old_block, count, size); });
}

void hooked_free(void* block) noexcept {
  ThreadHookState& thread = t_hook_state;
  if (thread.in_hook || block == nullptr) return g_original.free(block);
  thread.in_hook = true;
  // Out of the table before the original frees it: from then on another thread may get the
  // same address from malloc and record it.
  if (Engine* engine = enter_recording(thread)) {
    engine->on_free(thread, block);
    leave_recording(thread);
  }
  g_original.free(block);
  thread.in_hook = false;
}

int hooked_posix_memalign(void** out, size_t alignment, size_t size) noexcept {
  uintptr_t caller = MEMPROF_CALLER;
  ThreadHookState& thread = t_hook_state;
  if (thread.in_hook) return g_original.posix_memalign(out, alignment, size);
  thread.in_hook = true;
  uint64_t recorded = size;
  take_request(thread, caller, recorded, size);
  int result = g_original.posix_memalign(out, alignment, size);
  if (result == 0) record_allocation(thread, *out, recorded, caller);
  thread.in_hook = false;
  return result;
}

// One template for the (alignment, size) and (size) allocators.
template <auto Original, typename... Args>
void* aligned(uintptr_t caller, size_t size, Args... args) {
  ThreadHookState& thread = t_hook_state;
  if (thread.in_hook) return (g_original.*Original)(args...);
  thread.in_hook = true;
  uint64_t recorded = size;
  take_request(thread, caller, recorded, size);
  void* block = (g_original.*Original)(args...);
  record_allocation(thread, block, recorded, caller);
  thread.in_hook = false;
  return block;
}

void* hooked_aligned_alloc(size_t alignment, size_t size) noexcept {
  return aligned<&Originals::aligned_alloc>(MEMPROF_CALLER, size, alignment, size);
}
void* hooked_memalign(size_t alignment, size_t size) noexcept {
  return aligned<&Originals::memalign>(MEMPROF_CALLER, size, alignment, size);
}
void* hooked_valloc(size_t size) noexcept { return aligned<&Originals::valloc>(MEMPROF_CALLER, size, size); }
// Recorded with the requested size (pvalloc rounds it up to whole pages).
void* hooked_pvalloc(size_t size) noexcept { return aligned<&Originals::pvalloc>(MEMPROF_CALLER, size, size); }

// libstdc++'s operator new: its malloc call would charge every block of a C++ program (each
// `new`, each std::string and container buffer) to _Znwm+0x1c (libstdc++.so.6), whatever line
// said `new`. Hooked at its entry, it hands its caller and size to the allocation it makes
// (take_new_request), which records the block; new[] and nothrow new call plain new, which
// keeps the outermost caller. The original may throw std::bad_alloc (or what a new_handler
// throws): the request is withdrawn on the way out. operator delete needs no hook: libstdc++'s
// calls free.
template <auto Original, typename... Args>
void* new_block(uintptr_t caller, size_t size, Args... args) {
  ThreadHookState& thread = t_hook_state;
  if (thread.in_hook || (thread.request_caller != 0 && !thread.request_exact))
    return (g_original.*Original)(size, args...);
  thread.request_caller = caller;
  thread.request_size = size;
  thread.request_exact = false;
  void* block;
  try {
    block = (g_original.*Original)(size, args...);
  } catch (...) {
    thread.request_caller = 0;
    throw;
  }
  thread.request_caller = 0;  // when the block came from no hooked allocator
  return block;
}

void* hooked_new_single(size_t size) { return new_block<&Originals::new_single>(MEMPROF_CALLER, size); }
void* hooked_new_array(size_t size) { return new_block<&Originals::new_array>(MEMPROF_CALLER, size); }
void* hooked_new_single_nothrow(size_t size, const std::nothrow_t& tag) noexcept {
  return new_block<&Originals::new_single_nothrow>(MEMPROF_CALLER, size, tag);
}
void* hooked_new_array_nothrow(size_t size, const std::nothrow_t& tag) noexcept {
  return new_block<&Originals::new_array_nothrow>(MEMPROF_CALLER, size, tag);
}
void* hooked_new_single_aligned(size_t size, std::align_val_t alignment) {
  return new_block<&Originals::new_single_aligned>(MEMPROF_CALLER, size, alignment);
}
void* hooked_new_array_aligned(size_t size, std::align_val_t alignment) {
  return new_block<&Originals::new_array_aligned>(MEMPROF_CALLER, size, alignment);
}
void* hooked_new_single_aligned_nothrow(size_t size, std::align_val_t alignment, const std::nothrow_t& tag) noexcept {
  return new_block<&Originals::new_single_aligned_nothrow>(MEMPROF_CALLER, size, alignment, tag);
}
void* hooked_new_array_aligned_nothrow(size_t size, std::align_val_t alignment, const std::nothrow_t& tag) noexcept {
  return new_block<&Originals::new_array_aligned_nothrow>(MEMPROF_CALLER, size, alignment, tag);
}

// Ruby's allocator (ruby_xmalloc & co) calls malloc from inside libruby: every block a C
// extension makes with ALLOC_N, ZALLOC_N or REALLOC_N was charged to Ruby's allocator
// (`rb_gc_impl_malloc+0x4b (libruby.so.3.4)`), whichever extension asked. Hooked at their
// entry, these hand their caller and the bytes asked for to the allocation they make, as
// operator new does, but only an allocation of exactly those bytes takes it: a Ruby exception
// (a longjmp past the end of this function) or GC.stress's collection before the malloc must not
// give the caller a block of another size. Ruby asks malloc for 1 byte when given 0. Each call
// sets its own request: one left by an exception is replaced, never kept.
template <auto Original, typename... Args>
void* ruby_block(uintptr_t caller, uint64_t size, Args... args) {
  ThreadHookState& thread = t_hook_state;
  if (thread.in_hook) return (g_original.*Original)(args...);
  thread.request_caller = caller;
  thread.request_size = std::max<uint64_t>(size, 1);
  thread.request_exact = true;
  void* block = (g_original.*Original)(args...);
  thread.request_caller = 0;
  return block;
}

void* hooked_ruby_xmalloc(size_t size) { return ruby_block<&Originals::ruby_xmalloc>(MEMPROF_CALLER, size, size); }
void* hooked_ruby_xmalloc2(size_t count, size_t size) {
  return ruby_block<&Originals::ruby_xmalloc2>(MEMPROF_CALLER, product(count, size), count, size);
}
void* hooked_ruby_xcalloc(size_t count, size_t size) {
  return ruby_block<&Originals::ruby_xcalloc>(MEMPROF_CALLER, product(count, size), count, size);
}
void* hooked_ruby_xrealloc(void* block, size_t size) {
  return ruby_block<&Originals::ruby_xrealloc>(MEMPROF_CALLER, size, block, size);
}
void* hooked_ruby_xrealloc2(void* block, size_t count, size_t size) {
  return ruby_block<&Originals::ruby_xrealloc2>(MEMPROF_CALLER, product(count, size), block, count, size);
}

// --mmap: anonymous mappings only (a file mapping is the file's pages, not the program's
// memory). The allocator's own mmap calls (large blocks, arenas) come from inside a hook and go
// straight to the original: those blocks are counted once, as malloc's.
void* hooked_mmap(void* address, size_t length, int prot, int flags, int fd, off_t offset) noexcept {
  const uintptr_t caller = MEMPROF_CALLER;
  ThreadHookState& thread = t_hook_state;
  if (thread.in_hook) return g_original.mmap(address, length, prot, flags, fd, offset);
  thread.in_hook = true;
  void* region = g_original.mmap(address, length, prot, flags, fd, offset);
  if (region != MAP_FAILED && (flags & MAP_ANONYMOUS) != 0) record_allocation(thread, region, length, caller);
  thread.in_hook = false;
  return region;
}

int hooked_munmap(void* address, size_t length) noexcept {
  ThreadHookState& thread = t_hook_state;
  if (thread.in_hook) return g_original.munmap(address, length);
  thread.in_hook = true;
  // Out of the table first, as free does: once unmapped, the range may be mapped again.
  if (Engine* engine = enter_recording(thread)) {
    engine->on_unmap(thread, address, length);
    leave_recording(thread);
  }
  int result = g_original.munmap(address, length);
  thread.in_hook = false;
  return result;
}

// A realloc of the region (the new address is passed on whether MREMAP_FIXED asks for it or not:
// the kernel ignores it otherwise).
void* hooked_mremap(void* old_address, size_t old_size, size_t new_size, int flags, ...) noexcept {
  const uintptr_t caller = MEMPROF_CALLER;
  va_list rest;
  va_start(rest, flags);
  void* new_address = (flags & MREMAP_FIXED) != 0 ? va_arg(rest, void*) : nullptr;
  va_end(rest);
  auto call = [&] {
    void* region = g_original.mremap(old_address, old_size, new_size, flags, new_address);
    return region == MAP_FAILED ? nullptr : region;
  };
  ThreadHookState& thread = t_hook_state;
  if (thread.in_hook) return g_original.mremap(old_address, old_size, new_size, flags, new_address);
  void* region = resize(thread, old_address, new_size, caller, call);
  return region == nullptr ? MAP_FAILED : region;
}

// Where a hooked function comes from: the C library (or a preloaded allocator), libstdc++ (the
// operator new family, hooked only when libstdc++ defines it) or Ruby (hooked when defined).
enum class Family { kLibc, kLibstdcxx, kRuby };

struct HookSpec {
  const char* name;
  void* replacement;
  void** original;
  bool required;
  Family family = Family::kLibc;
};

// glibc declares the allocators with attributes (malloc, alloc_size) that a function pointer type
// does not carry; comparing the types is what we want, so the warning about them is silenced.
#pragma GCC diagnostic ignored "-Wignored-attributes"
#define MEMPROF_NATIVE_HOOK(function, required)                                              \
  ([] {                                                                                      \
    static_assert(std::is_same_v<decltype(&::function), decltype(&hooked_##function)>,       \
                  "the replacement for " #function " must have exactly its type");           \
    return HookSpec{#function, reinterpret_cast<void*>(&hooked_##function),                  \
                    reinterpret_cast<void**>(&g_original.function), required};               \
  }())

#define MEMPROF_NEW_HOOK(field, mangled)                                                     \
  ([] {                                                                                      \
    static_assert(std::is_same_v<decltype(g_original.field), decltype(&hooked_##field)>,     \
                  "the replacement for " mangled " must have exactly its type");              \
    return HookSpec{mangled, reinterpret_cast<void*>(&hooked_##field),                       \
                    reinterpret_cast<void**>(&g_original.field), false, Family::kLibstdcxx};  \
  }())

#define MEMPROF_RUBY_HOOK(function)                                                          \
  ([] {                                                                                      \
    static_assert(std::is_same_v<decltype(g_original.function), decltype(&hooked_##function)>, \
                  "the replacement for " #function " must have exactly its type");           \
    return HookSpec{#function, reinterpret_cast<void*>(&hooked_##function),                  \
                    reinterpret_cast<void**>(&g_original.function), false, Family::kRuby};   \
  }())

// The file name of the object defining `address` ("" when unknown).
std::string_view object_file_name(const void* address) {
  Dl_info info{};
  if (::dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  return file_name_of(info.dli_fname);
}

}  // namespace

Result<std::unique_ptr<AllocatorHooks>> AllocatorHooks::install(std::vector<std::string>& problems,
                                                                bool track_mmap) {
  // Order matters: see the header.
  std::vector<HookSpec> specs;
  if (track_mmap) specs.push_back(MEMPROF_NATIVE_HOOK(munmap, false));
  specs.insert(specs.end(), {
      MEMPROF_NATIVE_HOOK(free, true),           MEMPROF_NATIVE_HOOK(realloc, true),
      MEMPROF_NATIVE_HOOK(reallocarray, false),  MEMPROF_NATIVE_HOOK(malloc, true),
      MEMPROF_NATIVE_HOOK(calloc, false),        MEMPROF_NATIVE_HOOK(posix_memalign, false),
      MEMPROF_NATIVE_HOOK(memalign, false),      MEMPROF_NATIVE_HOOK(aligned_alloc, false),
      MEMPROF_NATIVE_HOOK(valloc, false),        MEMPROF_NATIVE_HOOK(pvalloc, false),
  });
  if (track_mmap) specs.insert(specs.end(), {MEMPROF_NATIVE_HOOK(mremap, false), MEMPROF_NATIVE_HOOK(mmap, false)});
  specs.insert(specs.end(), {
      MEMPROF_NEW_HOOK(new_single, "_Znwm"),
      MEMPROF_NEW_HOOK(new_array, "_Znam"),
      MEMPROF_NEW_HOOK(new_single_nothrow, "_ZnwmRKSt9nothrow_t"),
      MEMPROF_NEW_HOOK(new_array_nothrow, "_ZnamRKSt9nothrow_t"),
      MEMPROF_NEW_HOOK(new_single_aligned, "_ZnwmSt11align_val_t"),
      MEMPROF_NEW_HOOK(new_array_aligned, "_ZnamSt11align_val_t"),
      MEMPROF_NEW_HOOK(new_single_aligned_nothrow, "_ZnwmSt11align_val_tRKSt9nothrow_t"),
      MEMPROF_NEW_HOOK(new_array_aligned_nothrow, "_ZnamSt11align_val_tRKSt9nothrow_t"),
      MEMPROF_RUBY_HOOK(ruby_xmalloc),
      MEMPROF_RUBY_HOOK(ruby_xmalloc2),
      MEMPROF_RUBY_HOOK(ruby_xcalloc),
      MEMPROF_RUBY_HOOK(ruby_xrealloc),
      MEMPROF_RUBY_HOOK(ruby_xrealloc2),
  });
  // The functions found, each hooked once: an alias (same address) is served by the hook of
  // the name before it.
  struct Found {
    const HookSpec* spec;
    uintptr_t address;
    std::optional<size_t> request;  // its index in `requests`; none for an alias
  };
  std::vector<Found> found;
  std::vector<hook::EntryHookRequest> requests;
  std::string_view other_new;  // the object defining operator new, when it is not libstdc++
  for (const HookSpec& spec : specs) {
    void* target = ::dlsym(RTLD_DEFAULT, spec.name);
    if (target != nullptr && spec.family == Family::kLibstdcxx) {
      // A replacement operator new (tcmalloc's, the program's own) comes with a delete that
      // need not call free: hooking new alone would show every such block as leaked.
      if (std::string_view object = object_file_name(target); !object.starts_with("libstdc++")) {
        if (other_new.empty()) other_new = object.empty() ? "an unknown object" : object;
        continue;
      }
    }
    if (target == nullptr && spec.family != Family::kLibc) continue;  // no C++, no Ruby in the process
    if (target == nullptr) {
      if (spec.required) return err("native: {} not found", spec.name);
      problems.push_back(fmt::format("{}: not found, not tracked", spec.name));
      continue;
    }
    Found function{&spec, address_of(target), requests.size()};
    if (std::ranges::any_of(found, [&](const Found& earlier) { return earlier.address == function.address; })) {
      function.request.reset();
    } else {
      requests.push_back({target, spec.replacement, spec.original});
    }
    found.push_back(function);
  }
  if (!other_new.empty())
    problems.push_back(fmt::format("operator new is {}'s, not libstdc++'s: a block from `new` is charged to the "
                                   "allocator call inside it, if it makes one", other_new));
  // All in one parking of the other threads (malloc and free start with short instructions a
  // running thread could be between, docs/native.md): together, so that no thread sees malloc
  // hooked and free not, and a busy process is stopped once instead of a dozen times.
  auto installed = hook::EntryHook::install_many(requests, {.park_threads = true, .owner = "memprof native"});
  // Kept first, in installation order, so that a failure below removes them in the right one.
  std::unique_ptr<AllocatorHooks> hooks(new AllocatorHooks);
  for (auto& hook : installed)
    if (hook.ok()) hooks->hooks_.push_back(std::move(*hook));
  for (const Found& function : found) {
    const HookSpec& spec = *function.spec;
    HookedAllocator hooked{spec.name, function.address, {}};
    if (!function.request) {
      auto earlier = std::ranges::find(hooks->hooked_, function.address, &HookedAllocator::address);
      if (earlier == hooks->hooked_.end()) {
        problems.push_back(fmt::format("{}: not tracked (the same function as one that could not be hooked)", spec.name));
        continue;
      }
      // Same code, same signature and meaning: the earlier hook sees these calls.
      hooked.alias_of = earlier->name;
    } else if (const auto& hook = installed[*function.request]; !hook.ok()) {
      if (spec.required) return err("native: cannot hook {}: {}", spec.name, hook.message());
      problems.push_back(spec.family == Family::kLibc
                             ? fmt::format("{}: not tracked ({})", spec.name, hook.message())
                             : fmt::format("{}: not hooked ({}): its blocks are charged to the allocator call "
                                           "inside it",
                                           spec.name, hook.message()));
      continue;
    }
    hooks->hooked_.push_back(std::move(hooked));
  }
  return hooks;
}

AllocatorHooks::~AllocatorHooks() {
  // Allocating functions first, free last: each restore is one store, made in this order.
  std::reverse(hooks_.begin(), hooks_.end());
  hook::EntryHook::uninstall_all(hooks_);
}

}  // namespace memprof::native
