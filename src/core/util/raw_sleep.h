// A sleep without libc, for the waits memprof makes on the program's own threads (held before
// main until the trace starts, in exit() until the CLI has read the last calls, before an
// exec) and in hooks: usleep, nanosleep and clock_nanosleep there are functions a user may be
// tracing (`memprof trace -x usleep`), and each wait would be counted as the program's call,
// or still be in flight when the program ends.
#pragma once

#include <sys/syscall.h>

#include <chrono>
#include <ctime>

#include "core/util/raw_syscall.h"

namespace memprof {

// A signal may end it early (the callers wait in loops that look again).
inline void sleep_without_libc(std::chrono::microseconds duration) {
  const long us = static_cast<long>(duration.count());
  timespec pause{us / 1'000'000, (us % 1'000'000) * 1000};
  (void)raw_syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, reinterpret_cast<long>(&pause), 0);
}

}  // namespace memprof
