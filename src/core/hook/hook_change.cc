#include "core/hook/hook_change.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "core/hook/entry_trap.h"
#include "core/hook/patch.h"
#include "core/util/raw_syscall.h"

namespace memprof::hook {
namespace {

// Plain atomics, constant-initialized: nothing here may wait on a guard or a lock another
// thread could have held at the fork.
constinit std::atomic<int> g_open_changes{0};
constinit std::atomic<bool> g_frozen{false};
constinit std::atomic<pid_t> g_settled_in{0};  // the process settle_hooks_after_fork last ran in
constinit std::atomic<bool> g_handler_registered{false};
// This thread's open changes: the forking thread's own go on in the child (it closes them).
thread_local int t_open_changes __attribute__((tls_model("initial-exec"))) = 0;

void register_fork_handler() noexcept {
  if (g_handler_registered.load(std::memory_order_acquire)) return;
  if (!g_handler_registered.exchange(true, std::memory_order_acq_rel))
    (void)::pthread_atfork(nullptr, nullptr, &settle_hooks_after_fork);
}

}  // namespace

HookChange::HookChange() noexcept {
  register_fork_handler();
  ++t_open_changes;
  g_open_changes.fetch_add(1, std::memory_order_seq_cst);
}

HookChange::~HookChange() {
  g_open_changes.fetch_sub(1, std::memory_order_seq_cst);
  --t_open_changes;
}

void settle_hooks_after_fork() noexcept {
  // getpid without glibc (it has cached nothing since 2.25, but says so nowhere; and it may be
  // a hooked function).
  const auto self = static_cast<pid_t>(raw_syscall(SYS_getpid));
  // Once per process: a later handler (this one, registered with the first HookChange, runs
  // after the agent's) may find the agent's new thread in the middle of a patch, whose page
  // it must not make read-only again under that thread's store.
  if (g_settled_in.exchange(self, std::memory_order_relaxed) == self) return;
  // Then at once: until the int3s are gone, a function whose entry one holds kills a caller
  // that blocks SIGTRAP.
  put_back_entry_traps_in_child();
  restore_patch_protections_in_child();
  // The other threads' open changes: none of those threads exists here.
  if (g_open_changes.exchange(t_open_changes, std::memory_order_relaxed) != t_open_changes)
    g_frozen.store(true, std::memory_order_relaxed);
}

bool hooks_frozen() noexcept { return g_frozen.load(std::memory_order_relaxed); }

}  // namespace memprof::hook
