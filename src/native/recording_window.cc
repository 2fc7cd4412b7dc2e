#include "native/recording_window.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "core/util/raw_sleep.h"
#include "core/util/thread_exists.h"

namespace memprof::native {

thread_local ThreadHookState t_hook_state __attribute__((tls_model("initial-exec"))) = {};

namespace detail {
std::atomic<Engine*> g_engine{nullptr};
std::atomic<bool> g_hooks_need_fence{true};
}  // namespace detail

namespace {

ThreadSlot g_slots[kMaxThreadSlots];
std::atomic<uint32_t> g_slots_used{0};  // slots [0, used) have been handed out at least once

uint32_t current_tid() { return static_cast<uint32_t>(::syscall(SYS_gettid)); }

// Frees the slots of threads that exited (their TLS, and so their pointer to the slot, is gone).
void reclaim_exited_slots() noexcept {
  uint32_t used = g_slots_used.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < used && i < kMaxThreadSlots; ++i) {
    uint32_t tid = g_slots[i].owner_tid.load(std::memory_order_acquire);
    if (tid != 0 && !thread_exists(tid) &&
        g_slots[i].owner_tid.compare_exchange_strong(tid, 0, std::memory_order_acq_rel))
      g_slots[i].recording.store(0, std::memory_order_relaxed);
  }
}

bool take_free_slot(uint32_t used, uint32_t tid, ThreadSlot** out) {
  for (uint32_t i = 0; i < used && i < kMaxThreadSlots; ++i) {
    uint32_t free_slot = 0;
    if (g_slots[i].owner_tid.load(std::memory_order_relaxed) == 0 &&
        g_slots[i].owner_tid.compare_exchange_strong(free_slot, tid, std::memory_order_acq_rel)) {
      *out = &g_slots[i];
      return true;
    }
  }
  return false;
}

// MEMBARRIER_CMD_PRIVATE_EXPEDITED needs a registration, once per process.
bool register_membarrier() {
  int saved_errno = errno;
  long supported = ::syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  bool ok = supported >= 0 && (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
            ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  errno = saved_errno;
  return ok;
}

void sleep_briefly() { sleep_without_libc(std::chrono::microseconds(100)); }

}  // namespace

namespace detail {

// Runs at a thread's first hooked call, inside the hook: syscalls only, no malloc.
ThreadSlot* claim_thread_slot() noexcept {
  uint32_t tid = current_tid();
  ThreadSlot* slot = nullptr;
  for (;;) {
    uint32_t used = g_slots_used.load(std::memory_order_acquire);
    if (take_free_slot(used, tid, &slot)) break;
    uint32_t index = g_slots_used.fetch_add(1, std::memory_order_acq_rel);
    if (index < kMaxThreadSlots) {
      // Another thread scanning [0, used) may have taken this fresh slot first: then look again.
      uint32_t free_slot = 0;
      if (g_slots[index].owner_tid.compare_exchange_strong(free_slot, tid, std::memory_order_acq_rel)) {
        slot = &g_slots[index];
        break;
      }
      continue;
    }
    g_slots_used.store(kMaxThreadSlots, std::memory_order_release);
    reclaim_exited_slots();
    if (!take_free_slot(kMaxThreadSlots, tid, &slot)) return nullptr;  // untracked thread
    break;
  }
  t_hook_state.slot = slot;
  return slot;
}

}  // namespace detail

void publish_engine(Engine* engine) noexcept {
  static const bool membarrier_ready = register_membarrier();
  detail::g_hooks_need_fence.store(!membarrier_ready, std::memory_order_relaxed);
  detail::g_engine.store(engine, std::memory_order_release);
}

bool retire_engine(unsigned timeout_ms) noexcept {
  detail::g_engine.store(nullptr, std::memory_order_seq_cst);
  if (!detail::g_hooks_need_fence.load(std::memory_order_relaxed)) {
    int saved_errno = errno;
    if (::syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
      // Cannot happen once registered; without the barrier a window could be missed.
      errno = saved_errno;
      return false;
    }
    errno = saved_errno;
  }
  reclaim_exited_slots();
  uint32_t used = g_slots_used.load(std::memory_order_acquire);
  unsigned waited_ms = 0;
  for (uint32_t i = 0; i < used && i < kMaxThreadSlots; ++i) {
    for (unsigned polls = 0; g_slots[i].recording.load(std::memory_order_acquire) != 0; ++polls) {
      uint32_t tid = g_slots[i].owner_tid.load(std::memory_order_acquire);
      if (tid == 0 || !thread_exists(tid)) break;  // a forked child's copy of another thread
      sleep_briefly();
      if (polls % 10 == 9 && ++waited_ms > timeout_ms) return false;
    }
  }
  return true;
}

size_t claimed_thread_slots() noexcept {
  size_t claimed = 0;
  uint32_t used = g_slots_used.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < used && i < kMaxThreadSlots; ++i)
    if (g_slots[i].owner_tid.load(std::memory_order_relaxed) != 0) ++claimed;
  return claimed;
}

}  // namespace memprof::native
