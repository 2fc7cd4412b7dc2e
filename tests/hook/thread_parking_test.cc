// ThreadParking: other threads are held in the signal handler until resume(), and it knows
// where each one stopped.
#include <unistd.h>

#include <sys/syscall.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/hook/thread_parking.h"

namespace memprof::hook {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<uint64_t> g_spins{0};

// A loop the spinning thread never leaves until told: where it is parked is inside this
// function. noipa: a real function with its own code range.
std::atomic<int> g_spinners{0};

__attribute__((noipa)) void spin_here() {
  g_spinners.fetch_add(1);
  while (!g_stop.load(std::memory_order_relaxed)) g_spins.fetch_add(1, std::memory_order_relaxed);
}
__attribute__((noipa)) void after_spin_here() {}

TEST(ThreadParking, HoldsEveryOtherThreadUntilResumeAndKnowsWhereItStopped) {
  g_stop = false;
  std::vector<std::thread> threads;
  g_spinners = 0;
  for (int i = 0; i < 3; ++i) threads.emplace_back(spin_here);
  // Every one spinning: a thread still being created blocks every signal, and is waited for
  // only briefly.
  while (g_spinners.load() < 3 || g_spins.load() < 1000) ::usleep(100);
  auto parking = ThreadParking::prepare();
  ASSERT_TRUE(parking.ok()) << parking.message();
  parking->park(1000, /*spare_sleepers=*/true);
  EXPECT_EQ(parking->parked(), 3u);  // gtest's main thread has no other threads
  EXPECT_EQ(parking->unreached(), 0u);
  uint64_t held = g_spins.load();
  ::usleep(20000);
  EXPECT_EQ(g_spins.load(), held);  // nobody moved while parked
  auto begin = reinterpret_cast<uintptr_t>(&spin_here);
  auto end = reinterpret_cast<uintptr_t>(&after_spin_here);
  if (end < begin) end = begin + 64;
  EXPECT_TRUE(parking->any_stopped_inside(begin, end));
  EXPECT_FALSE(parking->any_stopped_inside(0, 4096));
  parking->resume();
  while (g_spins.load() < held + 1000) ::usleep(100);  // running again
  g_stop = true;
  for (auto& thread : threads) thread.join();
}

// A thread that blocks the signal can never arrive: it is not waited for (memprof's agent thread
// blocks every signal, and each patch made by another thread waited the whole timeout for it:
// a Ruby `require` of a library whose 275 functions were traced took 23.8 s).
TEST(ThreadParking, AThreadBlockingTheSignalIsNotWaitedFor) {
  std::atomic<bool> ready{false}, leave{false};
  std::atomic<uint64_t> spins{0};
  std::thread blocked([&] {
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
    ready = true;
    while (!leave) spins.fetch_add(1, std::memory_order_relaxed);  // running, never in the kernel for long
  });
  while (!ready) ::usleep(100);
  auto parking = ThreadParking::prepare();
  ASSERT_TRUE(parking.ok()) << parking.message();
  const auto start = std::chrono::steady_clock::now();
  parking->park(/*timeout_ms=*/20'000, /*spare_sleepers=*/false);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_LT(waited, std::chrono::seconds(10));  // not the 20 s timeout
  EXPECT_EQ(parking->parked(), 0u);
  EXPECT_EQ(parking->unreached(), 1u);
  parking->resume();
  leave = true;
  blocked.join();
}

// Asleep in the kernel, a thread that blocks the signal is where the kernel says it stopped:
// a patch can still tell whether it lies inside the bytes replaced.
TEST(ThreadParking, AThreadBlockingTheSignalAsleepInTheKernelIsKnownBlocked) {
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  std::atomic<bool> ready{false};
  std::thread sleeper([&] {
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
    ready = true;
    char byte;
    (void)!::read(pipe_ends[0], &byte, 1);
  });
  while (!ready) ::usleep(100);
  ::usleep(50 * 1000);  // inside its read
  EXPECT_EQ(thread_blocks_signal(static_cast<pid_t>(::syscall(SYS_gettid)), SIGUSR2), false);
  auto parking = ThreadParking::prepare();
  ASSERT_TRUE(parking.ok()) << parking.message();
  parking->park(/*timeout_ms=*/20'000, /*spare_sleepers=*/false);
  EXPECT_EQ(parking->blocked(), 1u);
  EXPECT_EQ(parking->unreached(), 0u);
  parking->resume();
  ASSERT_EQ(::write(pipe_ends[1], "x", 1), 1);
  sleeper.join();
  ::close(pipe_ends[0]);
  ::close(pipe_ends[1]);
}

// A thread asleep in the kernel is not signalled: the kernel says where it stopped, and its
// nanosleep (which no SA_RESTART restarts) runs to the end instead of returning EINTR.
TEST(ThreadParking, AThreadAsleepInTheKernelGetsNoSignalAndSleepsItsFullTime) {
  std::atomic<int> result{1}, error{0};
  std::atomic<bool> started{false};
  std::thread sleeper([&] {
    started = true;
    struct timespec pause = {0, 400 * 1000 * 1000};
    result = ::nanosleep(&pause, nullptr);
    error = errno;
  });
  while (!started) ::usleep(100);
  ::usleep(50 * 1000);  // well inside its sleep
  auto parking = ThreadParking::prepare();
  ASSERT_TRUE(parking.ok()) << parking.message();
  parking->park(1000, /*spare_sleepers=*/true);
  EXPECT_EQ(parking->blocked(), 1u);
  EXPECT_EQ(parking->parked(), 0u);
  EXPECT_EQ(parking->unreached(), 0u);
  // It stopped right after its syscall instruction, in libc: not inside this test's code.
  EXPECT_FALSE(parking->any_stopped_inside(reinterpret_cast<uintptr_t>(&spin_here),
                                           reinterpret_cast<uintptr_t>(&spin_here) + 64));
  parking->resume();
  sleeper.join();
  EXPECT_EQ(result.load(), 0) << "nanosleep was interrupted: " << std::strerror(error.load());
}

}  // namespace
}  // namespace memprof::hook
