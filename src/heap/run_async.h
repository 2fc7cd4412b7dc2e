// Work on another thread when one can be started.
#pragma once

#include <future>
#include <system_error>
#include <utility>

namespace memprof::heap {

// Runs `work` on another thread, or at get() when no thread can be started.
template <typename Work>
auto run_async(Work work) {
  try {
    return std::async(std::launch::async, std::move(work));
  } catch (const std::system_error&) {
    return std::async(std::launch::deferred, std::move(work));
  }
}

}  // namespace memprof::heap
