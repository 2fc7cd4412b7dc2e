// Per-thread state of the allocator hooks, and the "recording window" that lets a session stop
// while other threads are inside a hook.
//
// A hook that wants to touch the engine's tables opens a window: it marks its thread's slot as
// recording, then loads the published engine; it closes the window when it no longer touches
// the tables. retire_engine() unpublishes the engine and waits until no thread is inside a
// window, so the tables can be unmapped while calls are still in flight (a thread that opens a
// window later sees no engine and only calls the original function).
//
// The two sides form a Dekker pair (store flag, load engine / store engine, load flag). The
// hook side pays only a compiler barrier: the retiring side makes every running thread execute
// a full barrier with membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (sleeping threads pass a
// context switch). Where membarrier is missing, hooks use a real fence instead.
//
// Thread slots live in static memory (never malloc); a thread claims one at its first hooked
// call. Threads that exit leave their slot behind; slots of threads that no longer exist are
// reclaimed when slots run out and when a session stops.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "native/site_key.h"

namespace memprof::native {

class Engine;

inline constexpr size_t kMaxThreadSlots = 4096;

struct alignas(64) ThreadSlot {
  std::atomic<uint32_t> owner_tid{0};  // 0: free
  std::atomic<uint32_t> recording{0};  // 1 while the owner is inside a recording window
};

// This thread's hook state. Initial-exec TLS: a %fs-relative access, no __tls_get_addr (which
// may call malloc the first time a thread touches a dlopen'ed object's TLS).
struct ThreadHookState {
  ThreadSlot* slot;
  uintptr_t last_allocation;  // this thread's latest tracked block, for "temporary" frees
  bool in_hook;   // inside a hook: nested allocator calls go straight to the original
  bool internal;  // the engine's own work (start, snapshot, stop): recorded apart, never reported
  LastRubyFile last_ruby_file;
  // Inside operator new or Ruby's ruby_xmalloc & co (allocator_hooks.cc): their caller and the
  // bytes asked for, which the allocation they make takes (and clears) in place of its own.
  // request_exact: only an allocation of request_size bytes takes it (Ruby's).
  uintptr_t request_caller;
  uint64_t request_size;
  bool request_exact;
};
extern thread_local ThreadHookState t_hook_state __attribute__((tls_model("initial-exec")));

namespace detail {
extern std::atomic<Engine*> g_engine;
extern std::atomic<bool> g_hooks_need_fence;
ThreadSlot* claim_thread_slot() noexcept;
}  // namespace detail

// Opens a window: the engine to record into, or null (no session; nothing to close then).
inline Engine* enter_recording(ThreadHookState& thread) noexcept {
  ThreadSlot* slot = thread.slot;
  if (slot == nullptr && (slot = detail::claim_thread_slot()) == nullptr) return nullptr;
  slot->recording.store(1, std::memory_order_relaxed);
  if (detail::g_hooks_need_fence.load(std::memory_order_relaxed))
    std::atomic_thread_fence(std::memory_order_seq_cst);
  else
    std::atomic_signal_fence(std::memory_order_seq_cst);
  Engine* engine = detail::g_engine.load(std::memory_order_acquire);
  if (engine == nullptr) slot->recording.store(0, std::memory_order_release);
  return engine;
}

inline void leave_recording(ThreadHookState& thread) noexcept {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  thread.slot->recording.store(0, std::memory_order_release);
}

// Makes `engine` the one hooks record into (before the hooks are installed).
void publish_engine(Engine* engine) noexcept;

// Unpublishes the engine and waits up to `timeout_ms` until no thread is inside a window.
// False on timeout (a thread stopped inside a hook): the caller must then leave the engine's
// memory mapped.
bool retire_engine(unsigned timeout_ms) noexcept;

// Slots held by threads that still exist (for the memory figures and tests).
size_t claimed_thread_slots() noexcept;

// Makes the calling thread's allocations the engine's own while it lives (see `internal`).
class ScopedInternal {
 public:
  ScopedInternal() noexcept : previous_(t_hook_state.internal) { t_hook_state.internal = true; }
  ~ScopedInternal() { t_hook_state.internal = previous_; }
  ScopedInternal(const ScopedInternal&) = delete;
  ScopedInternal& operator=(const ScopedInternal&) = delete;

 private:
  bool previous_;
};

}  // namespace memprof::native
