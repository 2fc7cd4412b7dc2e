// Following dlopen: GOT hooks also land in objects loaded after they were installed, before
// dlopen returns to its caller.
//
// Mechanism: while at least one GotHook follows dlopen, the follower itself GOT-hooks dlopen,
// dlmopen and dlclose in every object (loader and vdso excepted). After the real dlopen
// returns, every following hook is applied to the objects not seen before (the library and its
// dependencies); after dlclose, records of unloaded objects are dropped so that a later mapping
// at the same address is never written to by an uninstall.
//
// Why not watch r_debug/_dl_debug_state: the loader announces RT_CONSISTENT after mapping but
// *before* relocating the new objects, so a GOT patched then is overwritten by the relocation
// that follows; _dl_debug_state is also a one-byte `ret`, too short for an entry hook. After
// dlopen returns is the first moment the new GOTs hold their final values. The cost is stated in
// docs/hooks.md: calls made by the new library's constructors are not seen, and dlopen calls
// made inside libc itself (NSS, iconv) are not followed.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "core/hook/got_hook_state.h"
#include "core/hook/hook_change.h"

namespace memprof::hook {
namespace {

std::atomic<void*> real_dlopen{nullptr};
std::atomic<void*> real_dlmopen{nullptr};
std::atomic<void*> real_dlclose{nullptr};

struct Follower {
  size_t users = 0;
  std::vector<std::shared_ptr<GotHook::State>> hooks;
};

// Leaked on purpose: hooks may fire from other threads while static destructors run at exit.
Follower& follower() {
  static auto* instance = new Follower;
  return *instance;
}

void patch_new_objects() {
  if (hooks_frozen()) return;
  int saved_errno = errno;
  {
    HookChange change;
    std::lock_guard lock(got_registry_mutex());
    auto objects = loaded_objects();
    if (objects.ok()) {
      for (const auto& state : active_got_hooks()) {
        if (!state->options.follow_dlopen && !state->internal) continue;
        for (const auto& object : *objects)
          if (Status status = patch_object_locked(*state, object); !status.ok())
            state->follow_errors.push_back(object.path + ": " + status.message());
      }
    }
  }
  errno = saved_errno;
}

void forget_unloaded_objects() {
  if (hooks_frozen()) return;
  int saved_errno = errno;
  {
    HookChange change;
    std::lock_guard lock(got_registry_mutex());
    auto objects = loaded_objects();
    if (objects.ok()) {
      auto gone = [&](const ObjectKey& key) { return !is_loaded(*objects, key); };
      for (const auto& state : active_got_hooks()) {
        std::erase_if(state->slots, [&](const GotHook::State::Slot& s) { return gone(s.object); });
        std::erase_if(state->seen, gone);
      }
    }
  }
  errno = saved_errno;
}

void* follow_dlopen(const char* file, int mode) {
  auto real = reinterpret_cast<decltype(&::dlopen)>(real_dlopen.load(std::memory_order_acquire));
  void* handle = real(file, mode);
  if (handle != nullptr) patch_new_objects();
  return handle;
}

void* follow_dlmopen(Lmid_t namespace_id, const char* file, int mode) {
  auto real = reinterpret_cast<decltype(&::dlmopen)>(real_dlmopen.load(std::memory_order_acquire));
  void* handle = real(namespace_id, file, mode);
  if (handle != nullptr) patch_new_objects();
  return handle;
}

int follow_dlclose(void* handle) {
  auto real = reinterpret_cast<decltype(&::dlclose)>(real_dlclose.load(std::memory_order_acquire));
  int result = real(handle);
  forget_unloaded_objects();
  return result;
}

}  // namespace

std::mutex& got_registry_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}

std::vector<std::shared_ptr<GotHook::State>>& active_got_hooks() {
  static auto* hooks = new std::vector<std::shared_ptr<GotHook::State>>;
  return *hooks;
}

namespace {

struct FollowedFunction {
  const char* symbol;
  void* replacement;
  std::atomic<void*>* real;
};

Status install_follower_hook(const FollowedFunction& function, Follower& f) {
  // The real function is published before any slot points at the replacement.
  MEMPROF_TRY(real, GotHook::find_original(function.symbol));
  function.real->store(real, std::memory_order_release);
  GotHookOptions every_object{.object_filter = [](std::string_view) { return true; },
                              .follow_dlopen = false};
  MEMPROF_TRY(state, install_got_hook_locked(function.symbol, function.replacement,
                                             std::move(every_object), /*internal=*/true));
  f.hooks.push_back(state);
  return ok_status();
}

}  // namespace

Status retain_dlopen_follower_locked() {
  Follower& f = follower();
  if (f.users++ > 0) return ok_status();
  const FollowedFunction functions[] = {
      {"dlopen", reinterpret_cast<void*>(&follow_dlopen), &real_dlopen},
      {"dlmopen", reinterpret_cast<void*>(&follow_dlmopen), &real_dlmopen},
      {"dlclose", reinterpret_cast<void*>(&follow_dlclose), &real_dlclose},
  };
  for (const FollowedFunction& function : functions) {
    if (Status status = install_follower_hook(function, f); !status.ok()) {
      release_dlopen_follower_locked();  // drops the hooks installed so far
      return status;
    }
  }
  return ok_status();
}

void release_dlopen_follower_locked() {
  Follower& f = follower();
  if (f.users == 0 || --f.users > 0) return;
  auto& active = active_got_hooks();
  for (auto it = f.hooks.rbegin(); it != f.hooks.rend(); ++it) {
    std::erase(active, *it);
    unpatch_all_locked(**it);
  }
  f.hooks.clear();
}

}  // namespace memprof::hook
