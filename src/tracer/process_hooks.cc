#include "tracer/process_hooks.h"

#include <dlfcn.h>

#include <memory>
#include <mutex>
#include <vector>

#include "core/hook/entry_hook.h"
#include "core/hook/hook_change.h"
#include "tracer/trace_session.h"
#include "tracer/trampoline.h"

namespace memprof::tracer {
namespace {

using DlopenFn = void* (*)(const char*, int);
using DlcloseFn = int (*)(void*);
using RaiseFn = int (*)(void*);
using ForcedUnwindFn = int (*)(void*, void*, void*);

// Guards everything below. Taken by dlopen's replacement after the real dlopen returned (the
// loader's lock is free again), never inside a traced call.
std::mutex g_mutex;
TraceSession* g_session = nullptr;

// Leaked on purpose: exit() runs static destructors while the agent's thread may still stop a
// trace (it waits for `memprof trace` at exit), and while other threads call hooked functions.
struct Hooks {
  std::unique_ptr<hook::EntryHook> dlopen;
  std::unique_ptr<hook::EntryHook> dlclose;
  std::vector<std::unique_ptr<hook::EntryHook>> unwinders;
};
Hooks& hooks() {
  static auto* instance = new Hooks;
  return *instance;
}
DlopenFn g_real_dlopen = nullptr;
DlcloseFn g_real_dlclose = nullptr;
RaiseFn g_real_raise = nullptr;
ForcedUnwindFn g_real_forced_unwind = nullptr;

int raise_exception(void* exception) {
  restore_return_addresses();
  return __atomic_load_n(&g_real_raise, __ATOMIC_ACQUIRE)(exception);
}

int forced_unwind(void* exception, void* stop, void* stop_argument) {
  restore_return_addresses();
  return __atomic_load_n(&g_real_forced_unwind, __ATOMIC_ACQUIRE)(exception, stop, stop_argument);
}

// Entry-hooks `name` (first definition in load order) unless hooked already.
template <typename Fn>
void hook_unwinder_locked(const char* name, Fn replacement, Fn* original) {
  void* target = ::dlsym(RTLD_DEFAULT, name);
  if (target == nullptr) return;  // no libgcc_s (yet): no C++ exception can be thrown
  for (const auto& hook : hooks().unwinders)
    if (hook->target() == target) return;
  auto hook = hook::EntryHook::install(target, reinterpret_cast<void*>(replacement),
                                       {.park_threads = true, .publish_original = reinterpret_cast<void**>(original),
                                   .owner = "memprof trace's own watch"});
  if (hook.ok()) hooks().unwinders.push_back(std::move(*hook));
}

void hook_unwinders_locked() {
  hook_unwinder_locked("_Unwind_RaiseException", &raise_exception, &g_real_raise);
  hook_unwinder_locked("_Unwind_ForcedUnwind", &forced_unwind, &g_real_forced_unwind);
}

void* watched_dlopen(const char* file, int flags) {
  void* handle = __atomic_load_n(&g_real_dlopen, __ATOMIC_ACQUIRE)(file, flags);
  // A child forked while a trace changed (hook_change.h): g_mutex may be held for good.
  if (handle != nullptr && !hook::hooks_frozen()) {
    Untraced untraced;
    hook::HookChange change;
    std::lock_guard lock(g_mutex);
    hook_unwinders_locked();  // libgcc_s may have come with the new objects
    if (g_session != nullptr) g_session->hook_new_objects();
  }
  return handle;
}

// An object unloaded and loaded again lands at the same address as often as not: with the
// same identity (bias, dynamic section) it looked seen, and was never traced again.
int watched_dlclose(void* handle) {
  const int result = __atomic_load_n(&g_real_dlclose, __ATOMIC_ACQUIRE)(handle);
  if (result == 0 && !hook::hooks_frozen()) {
    Untraced untraced;
    hook::HookChange change;
    std::lock_guard lock(g_mutex);
    if (g_session != nullptr) g_session->forget_unloaded_objects();
  }
  return result;
}

// Entry-hooks the loader function `name` with `replacement`.
template <typename Fn>
Result<std::unique_ptr<hook::EntryHook>> hook_loader_function(const char* name, Fn replacement, Fn* original) {
  void* address = ::dlsym(RTLD_DEFAULT, name);
  if (address == nullptr) return err("{} not found: cannot watch objects loaded later", name);
  return hook::EntryHook::install(address, reinterpret_cast<void*>(replacement),
                                  {.park_threads = true, .publish_original = reinterpret_cast<void**>(original),
                                   .owner = "memprof trace's own watch"});
}

}  // namespace

uint64_t calls_in_flight() {
  uint64_t in_flight = 0;
  for (uint32_t i = 0; i < thread_state_count(); ++i)
    if (ThreadTrace* state = thread_state(i); state != nullptr)
      in_flight += __atomic_load_n(&state->depth, __ATOMIC_RELAXED);
  return in_flight;
}

Status watch_process_for(TraceSession* session) {
  if (hook::hooks_frozen()) return err("{}", hook::kFrozenHooks);
  hook::HookChange change;
  std::lock_guard lock(g_mutex);
  if (g_session != nullptr) return err("this process is already being traced by another memprof trace");
  hook_unwinders_locked();
  if (hooks().dlopen == nullptr) {
    MEMPROF_TRY(hook, hook_loader_function("dlopen", &watched_dlopen, &g_real_dlopen));
    hooks().dlopen = std::move(hook);
  }
  if (hooks().dlclose == nullptr) {
    // Without it an object loaded again at the same address is not traced again: no reason to
    // refuse the trace.
    if (auto hook = hook_loader_function("dlclose", &watched_dlclose, &g_real_dlclose); hook.ok())
      hooks().dlclose = std::move(*hook);
  }
  g_session = session;
  return ok_status();
}

void stop_watching_for(TraceSession* session) {
  if (hook::hooks_frozen()) return;
  hook::HookChange change;
  std::lock_guard lock(g_mutex);
  if (g_session != session) return;
  g_session = nullptr;
  hooks().dlopen.reset();  // its trampoline stays callable for a thread inside it
  hooks().dlclose.reset();
}

uint64_t release_unwinder_hooks_if_idle() {
  if (hook::hooks_frozen()) return calls_in_flight();
  wait_for_calls_being_entered();
  hook::HookChange change;
  std::lock_guard lock(g_mutex);
  if (g_session != nullptr) return calls_in_flight();  // the next session traces already
  uint64_t in_flight = calls_in_flight();
  // The originals stay published: a thread inside a replacement right now still calls them.
  if (in_flight == 0) hooks().unwinders.clear();
  return in_flight;
}

}  // namespace memprof::tracer
