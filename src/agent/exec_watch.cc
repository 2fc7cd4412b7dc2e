#include "agent/exec_watch.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "agent/child_processes.h"
#include "agent/libc_entry_hook.h"
#include "core/util/raw_sleep.h"

namespace memprof::agent {
namespace {

using Execve = int (*)(const char*, char* const[], char* const[]);
Execve g_original_execve = nullptr;  // written before the jump, never cleared
std::atomic<pid_t> g_served_pid{0};  // the process whose recordings the CLI reads
std::atomic<bool> g_waiting{false};
std::atomic<bool> g_released{false};

int held_execve(const char* path, char* const argv[], char* const envp[]) {
  // A vfork child runs here too, as another pid, while its parent's agent serves the CLI. An
  // exec that is going to fail (execvp's other PATH directories) holds nothing, nor a second
  // thread's while one waits. No libc call before the exec: the trace may be counting them.
  const auto self = static_cast<pid_t>(raw_syscall(SYS_getpid));
  const bool runnable = raw_syscall(SYS_access, reinterpret_cast<long>(path), X_OK) == 0;
  const bool served = self == g_served_pid.load(std::memory_order_acquire);
  // A child sharing this memory until its exec (vfork, posix_spawn) ran no fork handler: it is
  // counted here. (A fork()ed child counts in its own copy.)
  if (!served && runnable) count_child_process();
  bool idle = false;
  if (!served || !runnable || !g_waiting.compare_exchange_strong(idle, true, std::memory_order_acq_rel))
    return g_original_execve(path, argv, envp);
  const int saved_errno = errno;
  for (int waited_ms = 0; waited_ms < kExecWaitMs && !g_released.load(std::memory_order_acquire); ++waited_ms)
    sleep_without_libc(std::chrono::milliseconds(1));
  g_released.store(false, std::memory_order_release);
  errno = saved_errno;
  const int result = g_original_execve(path, argv, envp);
  g_waiting.store(false, std::memory_order_release);  // it failed: the program goes on
  return result;
}

}  // namespace

Result<std::unique_ptr<ExecWatch>> ExecWatch::install() {
  g_served_pid.store(::getpid(), std::memory_order_release);
  MEMPROF_TRY(hook, hook_libc_entry("execve", reinterpret_cast<void*>(&held_execve),
                                    reinterpret_cast<void**>(&g_original_execve), "memprof's exec watch"));
  return std::unique_ptr<ExecWatch>(new ExecWatch(std::move(hook)));
}

bool exec_waiting() { return g_waiting.load(std::memory_order_acquire); }

void release_waiting_exec() { g_released.store(true, std::memory_order_release); }

}  // namespace memprof::agent
