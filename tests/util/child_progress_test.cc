// The watch over a forked child that writes a dump (core/util/child_progress.h): a real child's
// state, CPU time and wait channel, and when samples of them say it has stopped making progress.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "core/util/child_progress.h"

namespace memprof {
namespace {

ChildProgress asleep(uint64_t cpu_ticks, uint64_t io_bytes, char state = 'S') {
  ChildProgress progress;
  progress.state = state;
  progress.cpu_ticks = cpu_ticks;
  progress.io_bytes = io_bytes;
  return progress;
}

TEST(StallWatch, OnlyASleepWithoutCpuOrIoForTheWholeLimitIsAStall) {
  using std::chrono::seconds;
  const auto start = std::chrono::steady_clock::time_point{} + seconds(100);
  StallWatch watch(seconds(10));
  EXPECT_FALSE(watch.stalled(asleep(5, 100), start));
  EXPECT_FALSE(watch.stalled(asleep(5, 100), start + seconds(9)));
  EXPECT_TRUE(watch.stalled(asleep(5, 100), start + seconds(10)));

  // Any CPU time, any byte of I/O, or a state other than asleep starts the count again.
  StallWatch working(seconds(10));
  EXPECT_FALSE(working.stalled(asleep(5, 100), start));
  EXPECT_FALSE(working.stalled(asleep(6, 100), start + seconds(8)));
  EXPECT_FALSE(working.stalled(asleep(6, 100), start + seconds(17)));
  EXPECT_FALSE(working.stalled(asleep(6, 101), start + seconds(18)));
  EXPECT_FALSE(working.stalled(asleep(6, 101, 'D'), start + seconds(27)));
  EXPECT_FALSE(working.stalled(asleep(6, 101), start + seconds(36)));
  EXPECT_FALSE(working.stalled(asleep(6, 101, 'T'), start + seconds(37)));
  EXPECT_FALSE(working.stalled(asleep(6, 101, 'T'), start + seconds(60)));
  EXPECT_FALSE(working.stalled(asleep(6, 101), start + seconds(61)));
  EXPECT_TRUE(working.stalled(asleep(6, 101), start + seconds(71)));
}

// The words of the error a stalled child's caller sees.
TEST(StallWatch, SaysForHowLongAndWhereTheChildSleeps) {
  ChildProgress in_read = asleep(5, 100);
  in_read.wchan = "pipe_read";
  EXPECT_EQ(StallWatch(std::chrono::seconds(30)).describe(in_read),
            "made no progress for 30 s (asleep in pipe_read, no CPU time and no I/O)");
  EXPECT_EQ(StallWatch(std::chrono::milliseconds(1500)).describe(asleep(5, 100)),
            "made no progress for 1.5 s (asleep, no CPU time and no I/O)");
}

// A real child: asleep in a read of a pipe nobody writes, then spinning.
TEST(ChildProgress, ReadsStateCpuTimeAndWhereAChildSleeps) {
  int to_child[2];
  ASSERT_EQ(::pipe(to_child), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char byte;
    (void)!::read(to_child[0], &byte, 1);
    volatile uint64_t spin = 0;
    for (;;) spin = spin + 1;
  }
  std::optional<ChildProgress> progress;
  for (int i = 0; i < 200; ++i) {  // until it sleeps in the read
    progress = read_child_progress(child);
    if (progress && progress->state == 'S') break;
    ::usleep(10'000);
  }
  ASSERT_TRUE(progress.has_value());
  EXPECT_EQ(progress->state, 'S');
  EXPECT_EQ(progress->wchan.find('.'), std::string::npos) << progress->wchan;
  EXPECT_EQ(describe_state(*progress),
            progress->wchan.empty() ? "asleep" : "asleep in " + progress->wchan);
  const uint64_t cpu_before = progress->cpu_ticks;

  ASSERT_EQ(::write(to_child[1], "x", 1), 1);
  std::optional<ChildProgress> spinning;
  for (int i = 0; i < 300; ++i) {  // clock ticks are 10 ms
    spinning = read_child_progress(child);
    if (spinning && spinning->cpu_ticks > cpu_before) break;
    ::usleep(10'000);
  }
  ASSERT_TRUE(spinning.has_value());
  EXPECT_GT(spinning->cpu_ticks, cpu_before);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(to_child[0]);
  ::close(to_child[1]);
  EXPECT_FALSE(read_child_progress(child).has_value());
}

}  // namespace
}  // namespace memprof
