#include "inject/waiting_syscalls.h"

#include <linux/futex.h>
#include <sys/syscall.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace memprof::inject {

namespace {

struct SyscallName {
  int64_t number;
  std::string_view name;
};

constexpr std::array kWaiting = {
    SyscallName{SYS_read, "read"},
    SyscallName{SYS_readv, "readv"},
    SyscallName{SYS_pread64, "pread64"},
    SyscallName{SYS_preadv, "preadv"},
    SyscallName{SYS_preadv2, "preadv2"},
    SyscallName{SYS_recvfrom, "recvfrom"},
    SyscallName{SYS_recvmsg, "recvmsg"},
    SyscallName{SYS_recvmmsg, "recvmmsg"},
    SyscallName{SYS_poll, "poll"},
    SyscallName{SYS_ppoll, "ppoll"},
    SyscallName{SYS_select, "select"},
    SyscallName{SYS_pselect6, "pselect6"},
    SyscallName{SYS_epoll_wait, "epoll_wait"},
    SyscallName{SYS_epoll_pwait, "epoll_pwait"},
    SyscallName{SYS_epoll_pwait2, "epoll_pwait2"},
    SyscallName{SYS_nanosleep, "nanosleep"},
    SyscallName{SYS_clock_nanosleep, "clock_nanosleep"},
    SyscallName{SYS_accept, "accept"},
    SyscallName{SYS_accept4, "accept4"},
    SyscallName{SYS_wait4, "wait4"},
    SyscallName{SYS_waitid, "waitid"},
    SyscallName{SYS_pause, "pause"},
    SyscallName{SYS_rt_sigsuspend, "rt_sigsuspend"},
    SyscallName{SYS_rt_sigtimedwait, "rt_sigtimedwait"},
    SyscallName{SYS_futex, "futex"},
    SyscallName{SYS_futex_waitv, "futex_waitv"},
};

// Named only for messages: what a thread was doing when it was not safe to use.
constexpr std::array kOthers = {
    SyscallName{SYS_write, "write"},     SyscallName{SYS_openat, "openat"},
    SyscallName{SYS_close, "close"},     SyscallName{SYS_mmap, "mmap"},
    SyscallName{SYS_munmap, "munmap"},   SyscallName{SYS_mprotect, "mprotect"},
    SyscallName{SYS_brk, "brk"},         SyscallName{SYS_madvise, "madvise"},
    SyscallName{SYS_sendto, "sendto"},   SyscallName{SYS_sendmsg, "sendmsg"},
    SyscallName{SYS_connect, "connect"}, SyscallName{SYS_sched_yield, "sched_yield"},
};

bool is_futex_wait(uint64_t operation) {
  switch (operation & FUTEX_CMD_MASK) {
    case FUTEX_WAIT:
    case FUTEX_WAIT_BITSET:
    case FUTEX_WAIT_REQUEUE_PI:
    case FUTEX_LOCK_PI:
    case FUTEX_LOCK_PI2:
      return true;
    default:
      return false;
  }
}

template <size_t N>
const SyscallName* find_in(const std::array<SyscallName, N>& table, int64_t number) {
  auto it = std::find_if(table.begin(), table.end(),
                         [&](const SyscallName& entry) { return entry.number == number; });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace

bool is_waiting_syscall(const user_regs_struct& regs) {
  auto number = static_cast<int64_t>(regs.orig_rax);
  if (number < 0 || find_in(kWaiting, number) == nullptr) return false;
  // The second argument (rsi) is futex's operation.
  return number != SYS_futex || is_futex_wait(regs.rsi);
}

std::string syscall_name(int64_t number) {
  if (const auto* entry = find_in(kWaiting, number)) return std::string(entry->name);
  if (const auto* entry = find_in(kOthers, number)) return std::string(entry->name);
  return fmt::format("syscall {}", number);
}

}  // namespace memprof::inject
