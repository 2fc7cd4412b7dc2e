#include "native/fork_guard.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "native/engine.h"
#include "native/recording_window.h"

namespace memprof::native {
namespace {

// Set by prepare on the forking thread: the engine it locked (still inside its recording
// window, so that a stop waits for the fork to finish), and whether it was already in a hook.
thread_local Engine* t_locked_engine __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local bool t_was_in_hook __attribute__((tls_model("initial-exec"))) = false;

void before_fork() {
  ThreadHookState& thread = t_hook_state;
  t_was_in_hook = thread.in_hook;
  thread.in_hook = true;
  t_locked_engine = enter_recording(thread);
  if (t_locked_engine != nullptr) t_locked_engine->lock_for_fork();
}

void after_fork_in_parent() {
  ThreadHookState& thread = t_hook_state;
  if (t_locked_engine != nullptr) {
    t_locked_engine->unlock_after_fork();
    t_locked_engine = nullptr;
    leave_recording(thread);
  }
  thread.in_hook = t_was_in_hook;
}

// The forking thread has a new thread id in the child: its slot must say so, or the slot would
// look abandoned and be handed to another thread.
void after_fork_in_child() {
  if (ThreadSlot* slot = t_hook_state.slot)
    slot->owner_tid.store(static_cast<uint32_t>(::syscall(SYS_gettid)), std::memory_order_relaxed);
  after_fork_in_parent();
}

}  // namespace

void register_fork_guard() noexcept {
  static const bool registered = ::pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child) == 0;
  (void)registered;
}

}  // namespace memprof::native
