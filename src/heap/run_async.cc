#include "heap/run_async.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>

namespace memprof::heap {
namespace {

// As many workers as the analyzer ever keeps busy at once (three blocks parsing; the groupings,
// the lists and the reachability beside the dominator tree): more would only wait.
constexpr int kWorkers = 3;

class WorkerPool {
 public:
  WorkerPool() {
    for (int i = 0; i < kWorkers; ++i) {
      try {
        std::thread(&WorkerPool::work, this).detach();
        ++workers_;
      } catch (const std::system_error&) {
        break;  // fewer workers (perhaps none): the tasks that find none run at get()
      }
    }
  }

  bool push(std::shared_ptr<PoolJob> job) {
    if (workers_ == 0) return false;
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(job));
    }
    wake_.notify_one();
    return true;
  }

 private:
  [[noreturn]] void work() {
    for (;;) {
      std::shared_ptr<PoolJob> job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return !queue_.empty(); });
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job->run_if_unclaimed();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<PoolJob>> queue_;
  int workers_ = 0;
};

}  // namespace

bool hand_to_worker(std::shared_ptr<PoolJob> job) {
  // Never destroyed: its workers wait on its queue until the process ends.
  static WorkerPool* const pool = new WorkerPool;
  return pool->push(std::move(job));
}

}  // namespace memprof::heap
