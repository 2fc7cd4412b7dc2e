// Internal: the state one GotHook shares with the dlopen follower, and the registry of active
// GOT hooks. Everything here is guarded by got_registry_mutex().
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/hook/got_hook.h"
#include "core/hook/loaded_object.h"

namespace memprof::hook {

struct GotHook::State {
  std::string symbol;   // as requested
  std::string name;     // without "@VERSION"
  std::string version;  // requested, or the one every slot was bound to at install ("" if none)
  void* replacement = nullptr;
  void* original = nullptr;
  GotHookOptions options;
  bool internal = false;  // one of the follower's own dlopen/dlmopen/dlclose hooks

  struct Slot {
    GotSlot slot;
    ObjectKey object;
  };
  std::vector<Slot> slots;
  std::vector<ObjectKey> seen;  // objects already considered (patched or filtered out)
  std::vector<std::string> follow_errors;
};

std::mutex& got_registry_mutex();
std::vector<std::shared_ptr<GotHook::State>>& active_got_hooks();

// Patches `state`'s symbol in `object` if the object is selected; marks it seen.
Status patch_object_locked(GotHook::State& state, const LoadedObject& object);
// Restores every slot of `state` (skipping objects no longer loaded or slots changed since).
void unpatch_all_locked(GotHook::State& state);

// The dlopen follower (dlopen_follower.cc): installed while at least one GotHook follows dlopen.
Status retain_dlopen_follower_locked();
void release_dlopen_follower_locked();

// Installs a hook without taking the registry lock (used by the follower for its own hooks).
Result<std::shared_ptr<GotHook::State>> install_got_hook_locked(std::string symbol,
                                                                void* replacement,
                                                                GotHookOptions options,
                                                                bool internal);

}  // namespace memprof::hook
