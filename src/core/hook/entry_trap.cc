#include "core/hook/entry_trap.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/hook/patch.h"
#include "core/hook/previous_handler.h"
#include "core/hook/thread_parking.h"
#include "core/util/raw_syscall.h"

namespace memprof::hook {
namespace {

constexpr uint8_t kInt3 = 0xcc;
constexpr size_t kMaxEntries = 4096;

// The armed entries, append-only: a detour is published before its start, so the handler never
// sees a start without its detour. Re-arming an entry (a hook removed and installed again)
// replaces its detour; both trampolines stay valid (they are never unmapped). While an int3 is
// in place its entry keeps the byte it replaced (kNoByte once the jump or the byte is back).
constexpr int kNoByte = -1;
std::atomic<uintptr_t> g_start[kMaxEntries];
std::atomic<uintptr_t> g_detour[kMaxEntries];
std::atomic<int> g_replaced_byte[kMaxEntries];
std::atomic<size_t> g_entries{0};
struct sigaction g_previous_trap_action;

std::mutex& arm_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}

void on_trap(int signal, siginfo_t* info, void* context) {
  auto* user = static_cast<ucontext_t*>(context);
  if (info != nullptr && info->si_code == SI_KERNEL) {  // an int3 executed, not a kill()
    const auto at = static_cast<uintptr_t>(user->uc_mcontext.gregs[REG_RIP]) - 1;
    const size_t entries = g_entries.load(std::memory_order_acquire);
    for (size_t i = 0; i < entries; ++i)
      if (g_start[i].load(std::memory_order_acquire) == at) {
        user->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(g_detour[i].load(std::memory_order_acquire));
        return;
      }
  }
  if (call_previous_handler(g_previous_trap_action, signal, info, context)) return;
  if (g_previous_trap_action.sa_handler == SIG_IGN && (info == nullptr || info->si_code != SI_KERNEL)) return;
  // The program's own breakpoint or SIGTRAP with no handler of its own: what would have
  // happened without us (the kernel does not let an int3's SIGTRAP be ignored).
  int saved_errno = errno;
  struct sigaction default_action;
  std::memset(&default_action, 0, sizeof(default_action));
  default_action.sa_handler = SIG_DFL;
  ::sigaction(SIGTRAP, &default_action, nullptr);
  ::syscall(SYS_tgkill, ::getpid(), static_cast<pid_t>(::syscall(SYS_gettid)), SIGTRAP);
  errno = saved_errno;
}

}  // namespace

// A fork while an int3 was in place: the parent writes the jump, the child (alone, with the
// locks of threads it does not have) never would. It puts the byte back through /proc/self/mem,
// which needs no lock, no allocation and no change of page protection, with raw system calls:
// open, pwrite or close may be functions being hooked, and a caller that reaches their int3
// with SIGTRAP blocked (Ruby blocks every signal around fork) is killed.
void put_back_entry_traps_in_child() noexcept {
  const size_t entries = g_entries.load(std::memory_order_acquire);
  long fd = -1;
  for (size_t i = 0; i < entries; ++i) {
    const int byte = g_replaced_byte[i].exchange(kNoByte, std::memory_order_acq_rel);
    const auto start = g_start[i].load(std::memory_order_relaxed);
    // Forked between the jump's store and its entry_trap_replaced(): the jump stays.
    if (byte == kNoByte || *reinterpret_cast<const uint8_t*>(start) != kInt3) continue;
    if (fd < 0) fd = raw_syscall(SYS_open, reinterpret_cast<long>("/proc/self/mem"), O_RDWR | O_CLOEXEC);
    const auto value = static_cast<uint8_t>(byte);
    if (fd >= 0) (void)raw_syscall(SYS_pwrite64, fd, reinterpret_cast<long>(&value), 1, static_cast<long>(start));
  }
  if (fd >= 0) (void)raw_syscall(SYS_close, fd);
}

namespace {

// Makes SIGTRAP's action ours, if it is not (any more): the program may have set it since the
// last arming -- bash puts back the actions it found at start in every subshell it forks (a
// traced bash's subshell, traced in turn, was killed by the first int3 reached), and a program
// may install a handler of its own, which is then the one chained for traps that are not ours.
// Checked at every arming, under arm_mutex: one system call.
Status install_trap_handler() {
  static const int registered = ::pthread_atfork(nullptr, nullptr, &put_back_entry_traps_in_child);
  if (registered != 0) return err("cannot install the SIGTRAP handler of entry hooks: {}", std::strerror(registered));
  struct sigaction current;
  if (::sigaction(SIGTRAP, nullptr, &current) != 0)
    return err("cannot read SIGTRAP's action: {}", std::strerror(errno));
  if ((current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == &on_trap) return ok_status();
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_sigaction = &on_trap;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&action.sa_mask);
  // The program's action is what on_trap chains to; it is written before ours is installed, and
  // no trap but ours (a late signal of an entry already armed, which on_trap finds) reaches
  // on_trap while it changes.
  g_previous_trap_action = current;
  if (::sigaction(SIGTRAP, &action, nullptr) != 0)
    return err("cannot install the SIGTRAP handler of entry hooks: {}", std::strerror(errno));
  return ok_status();
}

// The entry of `start`, added when new; nullptr when the table is full.
std::atomic<int>* remember(uintptr_t start, uintptr_t detour) {
  const size_t entries = g_entries.load(std::memory_order_relaxed);
  for (size_t i = 0; i < entries; ++i)
    if (g_start[i].load(std::memory_order_relaxed) == start) {
      g_detour[i].store(detour, std::memory_order_release);
      return &g_replaced_byte[i];
    }
  if (entries == kMaxEntries) return nullptr;
  g_detour[entries].store(detour, std::memory_order_release);
  g_replaced_byte[entries].store(kNoByte, std::memory_order_relaxed);
  g_start[entries].store(start, std::memory_order_release);
  g_entries.store(entries + 1, std::memory_order_release);
  return &g_replaced_byte[entries];
}

std::atomic<int>* replaced_byte_of(uintptr_t start) {
  const size_t entries = g_entries.load(std::memory_order_acquire);
  for (size_t i = 0; i < entries; ++i)
    if (g_start[i].load(std::memory_order_acquire) == start) return &g_replaced_byte[i];
  return nullptr;
}

}  // namespace

std::vector<Status> arm_entry_traps(std::span<const EntryTrap> traps) {
  std::vector<Status> statuses(traps.size(), ok_status());
  std::lock_guard lock(arm_mutex());
  if (Status handler = install_trap_handler(); !handler.ok()) {
    std::fill(statuses.begin(), statuses.end(), handler);
    return statuses;
  }
  std::vector<SmallPatch> patches;
  std::vector<size_t> patched;  // index in `traps` of each patch
  std::vector<std::atomic<int>*> replaced_bytes;
  for (size_t i = 0; i < traps.size(); ++i) {
    std::atomic<int>* replaced = remember(traps[i].start, traps[i].detour);
    if (replaced == nullptr) {
      statuses[i] = err("more than {} functions have had entry hooks", kMaxEntries);
      continue;
    }
    replaced->store(*reinterpret_cast<const uint8_t*>(traps[i].start), std::memory_order_release);
    patches.push_back({traps[i].start, {kInt3}, 1});
    patched.push_back(i);
    replaced_bytes.push_back(replaced);
  }
  // One read of the maps, one protection change per page and one serialization for all.
  size_t written = 0;
  Status status = patch_memory(patches, &written);
  for (size_t k = written; k < patches.size(); ++k) {
    replaced_bytes[k]->store(kNoByte, std::memory_order_release);
    statuses[patched[k]] = status.ok() ? Status(err("int3 at {:#x} not written", traps[patched[k]].start)) : status;
  }
  return statuses;
}

Status arm_entry_trap(uintptr_t start, uintptr_t detour) {
  const EntryTrap trap{start, detour};
  return arm_entry_traps(std::span<const EntryTrap>(&trap, 1)).front();
}

void entry_trap_replaced(uintptr_t start) {
  if (std::atomic<int>* replaced = replaced_byte_of(start)) replaced->store(kNoByte, std::memory_order_release);
}

Status disarm_entry_trap(uintptr_t start) {
  std::atomic<int>* replaced = replaced_byte_of(start);
  const int byte = replaced == nullptr ? kNoByte : replaced->load(std::memory_order_acquire);
  if (byte == kNoByte) return err("no int3 of an entry hook at {:#x}", start);
  const auto original = static_cast<uint8_t>(byte);
  Status written = patch_memory(reinterpret_cast<void*>(start), {&original, 1});
  if (written.ok()) replaced->store(kNoByte, std::memory_order_release);
  return written;
}

bool any_thread_blocks_sigtrap(std::span<const pid_t> threads) {
  // A thread whose status cannot be read is gone.
  return std::any_of(threads.begin(), threads.end(),
                     [](pid_t tid) { return thread_blocks_signal(tid, SIGTRAP).value_or(false); });
}

}  // namespace memprof::hook
