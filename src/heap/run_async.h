// Work on another thread: a few worker threads that stay for the whole run.
//
// Starting a thread per piece of work cost 100-250 µs each on a VM (clone, a fresh stack, its
// page faults), and `analyze` of a 32 MB dump started 15 of them. The workers start at the first
// run_async and wait for work until the process ends. Work given to run_async waits for other
// tasks only through their get(): waiting by other means, with every worker doing the same,
// nothing would run the tasks waited for.
#pragma once

#include <atomic>
#include <future>
#include <memory>
#include <type_traits>
#include <utility>

namespace memprof::heap {

// One piece of work, run once: by the worker that takes it from the queue, or by the thread
// that waits for it, whichever comes first.
class PoolJob {
 public:
  virtual ~PoolJob() = default;
  // Runs the work unless someone already did or is doing it; true if it ran here.
  bool run_if_unclaimed() {
    if (!claim()) return false;
    run();
    return true;
  }
  // Takes the work without running it (a Task given up before it started).
  bool claim() { return !claimed_.exchange(true, std::memory_order_acq_rel); }

 private:
  virtual void run() = 0;
  std::atomic<bool> claimed_{false};
};

// Hands `job` to a worker; false when there is none (no thread could be started).
bool hand_to_worker(std::shared_ptr<PoolJob> job);

// The result of work given to run_async or run_deferred, as std::future but without a thread
// of its own: get() runs the work on the calling thread when no worker has taken it yet, so
// waiting for a task never deadlocks, however tasks wait for one another. Destroying a task
// waits for its work if a worker is running it (the work may use the caller's stack) and
// drops it if nobody started it.
template <typename T>
class Task {
 public:
  Task() = default;
  Task(Task&&) noexcept = default;
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      settle();
      job_ = std::move(other.job_);
      result_ = std::move(other.result_);
      in_background_ = other.in_background_;
    }
    return *this;
  }
  ~Task() { settle(); }

  // Runs the work here unless a worker took it; then its result (or its exception).
  T get() {
    run_here();
    return result_.get();
  }
  // Runs the work here unless a worker took it, and keeps the result for get().
  void run_here() {
    if (job_) job_->run_if_unclaimed();
  }
  // A worker may run it: without one (none could be started), only get() or run_here() will.
  bool in_background() const { return in_background_; }

  template <typename Work>
  static Task make(Work work, bool to_worker) {
    auto job = std::make_shared<Job>(std::move(work));
    Task task;
    task.result_ = job->work.get_future();
    task.job_ = job;
    task.in_background_ = to_worker && hand_to_worker(std::move(job));
    return task;
  }

 private:
  struct Job final : PoolJob {
    template <typename Work>
    explicit Job(Work w) : work(std::move(w)) {}
    void run() override { work(); }
    std::packaged_task<T()> work;
  };

  void settle() {
    if (!job_) return;
    if (!job_->claim() && result_.valid()) result_.wait();
    job_.reset();
  }

  std::shared_ptr<Job> job_;
  std::future<T> result_;
  bool in_background_ = false;
};

// Runs `work` on a worker thread, or at get() when no worker is free to take it first.
template <typename Work>
auto run_async(Work work) {
  return Task<std::invoke_result_t<Work&>>::make(std::move(work), /*to_worker=*/true);
}

// `work` as a task that only get() or run_here() runs, on the calling thread.
template <typename Work>
auto run_deferred(Work work) {
  return Task<std::invoke_result_t<Work&>>::make(std::move(work), /*to_worker=*/false);
}

}  // namespace memprof::heap
