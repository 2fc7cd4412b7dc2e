// Hooks and fork(). A child is a copy of its parent at one instant, with only the forking
// thread: a hook another thread was installing or removing just then is copied half-done (a
// registry vector half-grown, bytes half-restored), and a lock that thread held stays held in
// the child for good. Such a child must neither tear down nor add to what it inherited.
//
// So every change to the hooks (install, removal, following a dlopen), and every change to the
// recordings built on them (a trace or native session starting, being read, ending), runs
// inside a HookChange. A child forked while one was open has its hooks frozen: those it
// inherited keep passing calls through as they were, nothing more is hooked or unhooked in it
// (installs fail with kFrozenHooks), and the dlopen followers leave new objects alone. A child
// forked while none was open may use, and remove, everything it inherited.
#pragma once

namespace memprof::hook {

inline constexpr const char* kFrozenHooks =
    "this process was forked while memprof was changing its parent's hooks: it cannot be hooked (what it "
    "inherited only passes calls through)";

class HookChange {
 public:
  HookChange() noexcept;
  ~HookChange();
  HookChange(const HookChange&) = delete;
  HookChange& operator=(const HookChange&) = delete;
};

// Decides, in a forked child, whether its hooks are frozen, after putting back the int3s the
// fork copied (entry_trap.h) and the protection of pages a patch had made writable (patch.h):
// called by a pthread_atfork child handler (registered with the first HookChange) and first
// thing by the agent's own, while the child has no other thread. Once per process: later calls
// return at once.
void settle_hooks_after_fork() noexcept;

// True in a process forked while a HookChange was open, and in its descendants.
bool hooks_frozen() noexcept;

}  // namespace memprof::hook
