// ThreadParking: other threads are held in the signal handler until resume(), and it knows
// where each one stopped.
#include <unistd.h>

#include <atomic>
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
__attribute__((noipa)) void spin_here() {
  while (!g_stop.load(std::memory_order_relaxed)) g_spins.fetch_add(1, std::memory_order_relaxed);
}
__attribute__((noipa)) void after_spin_here() {}

TEST(ThreadParking, HoldsEveryOtherThreadUntilResumeAndKnowsWhereItStopped) {
  g_stop = false;
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back(spin_here);
  while (g_spins.load() < 1000) ::usleep(100);
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

TEST(ThreadParking, AThreadBlockingTheSignalIsReportedUnreachedAndNotWaitedForLong) {
  std::atomic<bool> ready{false}, leave{false};
  std::thread blocked([&] {
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
    ready = true;
    while (!leave) ::usleep(1000);
  });
  while (!ready) ::usleep(100);
  auto parking = ThreadParking::prepare();
  ASSERT_TRUE(parking.ok()) << parking.message();
  parking->park(50, /*spare_sleepers=*/false);
  EXPECT_EQ(parking->parked(), 0u);
  EXPECT_EQ(parking->unreached(), 1u);
  parking->resume();
  leave = true;
  blocked.join();  // its pending signal arrives once unblocked (at exit): ignored, not fatal
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
