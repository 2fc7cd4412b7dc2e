#include "core/hook/thread_parking.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "core/hook/previous_handler.h"
#include "core/util/raw_syscall.h"

namespace memprof::hook {
namespace {

constexpr size_t kMaxParked = 8192;
constexpr uint64_t kBlockingGraceMs = 2;  // see park()

int parking_signal() { return SIGRTMAX - 2; }

std::atomic<bool> g_parking{false};   // a parking is in progress: the signal is ours
std::atomic<bool> g_released{false};  // parked threads may leave
std::atomic<size_t> g_arrived{0};     // threads that recorded where they stopped
std::atomic<size_t> g_inside{0};      // threads inside the handler
// Who stopped where. A signal left pending by an earlier parking may park a thread in a later
// one: arrivals are matched by thread id, not counted.
std::atomic<pid_t> g_stopped_tid[kMaxParked];
std::atomic<uintptr_t> g_stopped_at[kMaxParked];
struct sigaction g_previous;          // the handler before ours (for stray signals)

void on_parking_signal(int signal, siginfo_t* info, void* context) {
  if (!g_parking.load(std::memory_order_acquire)) {
    // Not ours: the previous handler, if the program had one. Never the default action.
    (void)call_previous_handler(g_previous, signal, info, context);
    return;
  }
  int saved_errno = errno;
  g_inside.fetch_add(1, std::memory_order_acq_rel);
  const auto* user = static_cast<const ucontext_t*>(context);
  size_t index = g_arrived.fetch_add(1, std::memory_order_acq_rel);
  if (index < kMaxParked) {
    g_stopped_at[index].store(static_cast<uintptr_t>(user->uc_mcontext.gregs[REG_RIP]),
                              std::memory_order_release);
    g_stopped_tid[index].store(static_cast<pid_t>(raw_syscall(SYS_gettid)), std::memory_order_release);
  }
  // Raw system calls: the function being patched may be syscall() or sched_yield() itself.
  while (!g_released.load(std::memory_order_acquire)) (void)raw_syscall(SYS_sched_yield);
  g_inside.fetch_sub(1, std::memory_order_acq_rel);
  errno = saved_errno;
}

bool install_handler() {
  static const bool installed = [] {
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_sigaction = &on_parking_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&action.sa_mask);
    return ::sigaction(parking_signal(), &action, &g_previous) == 0;
  }();
  return installed;
}

int hex_digit(char c) noexcept {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// Where a thread blocked in the kernel stopped, from /proc/self/task/TID/syscall: its last
// field is the user instruction pointer ("running" while the thread is on a CPU or waiting for
// one). Raw system calls on a caller's buffer: nothing here allocates or takes a lock.
std::optional<uintptr_t> blocked_at(const char* syscall_path) noexcept {
  int fd = static_cast<int>(::syscall(SYS_open, syscall_path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return std::nullopt;
  char text[256];
  long length = ::syscall(SYS_read, fd, text, sizeof(text) - 1);
  ::syscall(SYS_close, fd);
  if (length <= 0 || text[0] < '-' || text[0] > '9') return std::nullopt;  // "running", or unreadable
  text[length] = '\0';
  const char* last = std::strrchr(text, 'x');  // the "0x" of the last field
  if (last == nullptr) return std::nullopt;
  uintptr_t address = 0;
  for (const char* c = last + 1; *c != '\0' && *c != '\n'; ++c) {
    const int digit = hex_digit(*c);
    if (digit < 0) return std::nullopt;
    address = address * 16 + static_cast<uintptr_t>(digit);
  }
  return address;
}

// Whether `signal` is in the "SigBlk:" mask of /proc/self/task/TID/status; nullopt when the
// file cannot be read (the thread is gone).
std::optional<bool> status_blocks(const char* status_path, int signal) noexcept {
  int fd = static_cast<int>(::syscall(SYS_open, status_path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return std::nullopt;
  char text[4096];
  long length = ::syscall(SYS_read, fd, text, sizeof(text) - 1);
  ::syscall(SYS_close, fd);
  if (length <= 0) return std::nullopt;
  text[length] = '\0';
  const char* field = std::strstr(text, "SigBlk:");
  if (field == nullptr) return std::nullopt;
  uint64_t mask = 0;
  for (const char* c = field + 7; *c != '\0' && *c != '\n'; ++c) {
    if (const int digit = hex_digit(*c); digit >= 0) mask = mask << 4 | static_cast<uint64_t>(digit);
  }
  return (mask >> (signal - 1) & 1) != 0;
}

uint64_t now_ms() {
  struct timespec now;
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000 + static_cast<uint64_t>(now.tv_nsec) / 1000000;
}

}  // namespace

std::optional<bool> thread_blocks_signal(pid_t tid, int signal) noexcept {
  // "/proc/self/task/TID/status" by hand: snprintf is not promised to leave malloc alone.
  char path[64] = "/proc/self/task/";
  char digits[16];
  size_t count = 0;
  for (auto n = static_cast<unsigned>(tid); count == 0 || n != 0; n /= 10) digits[count++] = static_cast<char>('0' + n % 10);
  size_t end = std::strlen(path);
  while (count > 0) path[end++] = digits[--count];
  std::memcpy(path + end, "/status", sizeof("/status"));
  return status_blocks(path, signal);
}

Result<ThreadParking> ThreadParking::prepare() {
  if (!install_handler()) return err("cannot install the thread-parking signal handler: {}", std::strerror(errno));
  ThreadParking parking;
  const pid_t self = static_cast<pid_t>(::syscall(SYS_gettid));
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return err("/proc/self/task: {}", std::strerror(errno));
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (tid != self && tid > 0) {
      parking.threads_.push_back(tid);
      parking.syscall_paths_.push_back("/proc/self/task/" + std::to_string(tid) + "/syscall");
    }
  }
  parking.blocked_at_.assign(parking.threads_.size(), 0);
  parking.blocks_.assign(parking.threads_.size(), false);
  ::closedir(dir);
  if (parking.threads_.size() > kMaxParked) return err("{} threads: too many to park", parking.threads_.size());
  return parking;
}

ThreadParking::ThreadParking(ThreadParking&& other) noexcept
    : threads_(std::move(other.threads_)),
      syscall_paths_(std::move(other.syscall_paths_)),
      blocked_at_(std::move(other.blocked_at_)),
      blocks_(std::move(other.blocks_)),
      blocked_(other.blocked_),
      signalled_(other.signalled_),
      parked_(other.parked_),
      signalled_blocking_(other.signalled_blocking_),
      active_(std::exchange(other.active_, false)) {}

ThreadParking::~ThreadParking() { resume(); }

namespace {
std::atomic<uint64_t> g_parkings{0};
}  // namespace

uint64_t ThreadParking::parkings_so_far() noexcept { return g_parkings.load(std::memory_order_relaxed); }

void ThreadParking::park(unsigned timeout_ms, bool spare_sleepers) noexcept {
  g_parkings.fetch_add(1, std::memory_order_relaxed);
  for (auto& tid : g_stopped_tid) tid.store(0, std::memory_order_relaxed);
  g_arrived.store(0, std::memory_order_relaxed);
  g_released.store(false, std::memory_order_relaxed);
  g_parking.store(true, std::memory_order_release);
  active_ = true;
  const pid_t pid = ::getpid();
  signalled_ = 0;
  blocked_ = 0;
  int saved_errno = errno;
  signalled_blocking_ = 0;
  for (size_t i = 0; i < threads_.size(); ++i) {
    // A thread that blocks the signal arrives only once it unblocks it: soon for one being
    // created (pthread_create blocks all signals until the new thread is set up), never for
    // memprof's agent, which blocks them all. Waiting the whole timeout for it at every patch
    // made a Ruby `require` of a library whose 275 functions were traced take 23.8 s: it is
    // waited for only kBlockingGraceMs, and asleep in the kernel, not signalled at all.
    blocks_[i] = thread_blocks_signal(threads_[i], parking_signal()).value_or(false);
    if (auto at = spare_sleepers || blocks_[i] ? blocked_at(syscall_paths_[i].c_str()) : std::nullopt) {
      blocked_at_[blocked_++] = *at;  // asleep in the kernel: no signal to cut its sleep short
      continue;
    }
    if (::syscall(SYS_tgkill, pid, threads_[i], parking_signal()) != 0) continue;
    ++signalled_;
    if (blocks_[i]) ++signalled_blocking_;
  }
  errno = saved_errno;
  const uint64_t start = now_ms();
  for (;;) {
    const Arrivals arrived = count_parked();
    parked_ = arrived.all;
    const uint64_t now = now_ms();
    if (parked_ >= signalled_ || now >= start + timeout_ms) break;
    const bool only_blocking_missing = arrived.all - arrived.blocking >= signalled_ - signalled_blocking_;
    if (only_blocking_missing && now >= start + kBlockingGraceMs) break;
    ::sched_yield();
  }
}

// How many of the threads signalled have recorded where they stopped, and how many of those
// block the signal (they arrived once they unblocked it).
ThreadParking::Arrivals ThreadParking::count_parked() const noexcept {
  size_t arrived = g_arrived.load(std::memory_order_acquire);
  if (arrived > kMaxParked) arrived = kMaxParked;
  Arrivals found;
  for (size_t t = 0; t < threads_.size(); ++t)
    for (size_t i = 0; i < arrived; ++i)
      if (g_stopped_tid[i].load(std::memory_order_acquire) == threads_[t]) {
        ++found.all;
        if (blocks_[t]) ++found.blocking;
        break;
      }
  return found;
}

void ThreadParking::resume() noexcept {
  if (!active_) return;
  active_ = false;
  g_released.store(true, std::memory_order_release);
  // Threads that were late may still enter: they see the release and leave at once. Wait for
  // those inside before the next parking resets the flags.
  const uint64_t deadline = now_ms() + 1000;
  while (g_inside.load(std::memory_order_acquire) != 0 && now_ms() < deadline) ::sched_yield();
  g_parking.store(false, std::memory_order_release);
}

bool ThreadParking::any_stopped_inside(uintptr_t begin, uintptr_t end) const noexcept {
  for (size_t i = 0; i < blocked_; ++i)
    if (blocked_at_[i] > begin && blocked_at_[i] < end) return true;
  for (size_t i = 0; i < parked_ && i < kMaxParked; ++i) {
    uintptr_t at = g_stopped_at[i].load(std::memory_order_acquire);
    if (at > begin && at < end) return true;
  }
  return false;
}

}  // namespace memprof::hook
