// run_async's tasks: waiting never deadlocks however many tasks wait for one another, a task
// dropped while a worker runs it waits for it (its work may use the dropper's stack), a task
// nobody started is dropped without running, and exceptions reach get().
#include "heap/run_async.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace memprof::heap {
namespace {

// Tasks that keep every worker busy until `release` is set.
struct BusyWorkers {
  std::atomic<bool> release{false};
  std::atomic<int> running{0};
  std::vector<Task<void>> tasks;

  ~BusyWorkers() {
    release = true;
    for (auto& task : tasks) task.get();
  }
};

// Occupies every worker, and returns once they all run.
void occupy_every_worker(BusyWorkers& busy) {
  for (int i = 0; i < 16; ++i) {
    busy.tasks.push_back(run_async([&busy] {
      ++busy.running;
      while (!busy.release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }));
  }
  // Workers take the tasks in order; the ones they never reach stay queued until get() runs
  // them here, which is what the callers of this function check.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (busy.running.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the other workers start theirs
}

TEST(RunAsync, TasksThatWaitForTasksFinishWhateverTheNumberOfWorkers) {
  // Ten levels of tasks each waiting for the next: more than there are workers, so at some
  // level no worker is free and get() must run the task itself.
  std::function<int(int)> nest = [&](int depth) -> int {
    if (depth == 0) return 0;
    Task<int> inner = run_async([&nest, depth] { return nest(depth - 1); });
    return inner.get() + 1;
  };
  Task<int> outer = run_async([&] { return nest(10); });
  EXPECT_EQ(outer.get(), 10);
}

TEST(RunAsync, GetRunsHereWhatNoWorkerTook) {
  BusyWorkers busy;
  occupy_every_worker(busy);
  const std::thread::id here = std::this_thread::get_id();
  Task<std::thread::id> queued = run_async([] { return std::this_thread::get_id(); });
  EXPECT_EQ(queued.get(), here);  // every worker is busy: it ran on this thread
}

TEST(RunAsync, DroppingARunningTaskWaitsForItsWork) {
  std::atomic<bool> started{false};
  int written = 0;
  {
    Task<void> task = run_async([&] {
      started = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      written = 42;  // the dropper's stack: it must still be there
    });
    while (!started.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(written, 42);
}

TEST(RunAsync, DroppingATaskNobodyStartedDoesNotRunIt) {
  std::atomic<bool> ran{false};
  {
    BusyWorkers busy;
    occupy_every_worker(busy);
    run_async([&ran] { ran = true; });  // queued behind the busy workers, then dropped
  }
  // The workers are free again and have passed over the dropped task by now.
  run_async([] {}).get();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(ran.load());
}

TEST(RunAsync, ExceptionsReachGet) {
  Task<int> task = run_async([]() -> int { throw std::runtime_error("parse failed"); });
  EXPECT_THROW(
      {
        try {
          task.get();
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "parse failed");
          throw;
        }
      },
      std::runtime_error);
}

TEST(RunAsync, DeferredWorkRunsOnlyAtGetOnTheCallingThread) {
  std::atomic<bool> ran{false};
  Task<std::thread::id> task = run_deferred([&ran] {
    ran = true;
    return std::this_thread::get_id();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(ran.load());
  EXPECT_FALSE(task.in_background());
  EXPECT_EQ(task.get(), std::this_thread::get_id());
}

}  // namespace
}  // namespace memprof::heap
