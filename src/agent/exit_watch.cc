#include "agent/exit_watch.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "agent/libc_entry_hook.h"
#include "agent/recording_sessions.h"
#include "core/util/raw_syscall.h"

namespace memprof::agent {
namespace {

using Exit = void (*)(int);
Exit g_original_exit = nullptr;      // written before the jump, never cleared
std::atomic<pid_t> g_exit_waiter{0};  // the process whose recordings the CLI reads

[[noreturn]] void held_exit(int status) {
  // No libc call: the trace may be counting them, and a signal handler may be the caller.
  if (static_cast<pid_t>(raw_syscall(SYS_getpid)) == g_exit_waiter.load(std::memory_order_acquire))
    wait_for_sessions_at_exit();
  g_original_exit(status);
  __builtin_unreachable();
}

}  // namespace

Result<std::unique_ptr<ExitWatch>> ExitWatch::install() {
  g_exit_waiter.store(::getpid(), std::memory_order_release);
  MEMPROF_TRY(hook, hook_libc_entry("_exit", reinterpret_cast<void*>(&held_exit),
                                    reinterpret_cast<void**>(&g_original_exit), "memprof's exit watch"));
  return std::unique_ptr<ExitWatch>(new ExitWatch(std::move(hook)));
}

}  // namespace memprof::agent
