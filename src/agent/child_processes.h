// How many child processes this process has started, for recordings to say that they left them
// out (a trace or native session records one process): fork() calls, counted by a
// pthread_atfork handler in the parent (but the agent's own, agent.cc), and children made by
// vfork or posix_spawn, which run no fork handler and are counted by the exec watch when they
// exec (they share this memory until then, exec_watch.cc). A vfork child that never execs is
// not counted.
#pragma once

#include <atomic>
#include <cstdint>

namespace memprof::agent {

inline std::atomic<uint64_t> g_child_processes{0};

// Async-signal-safe: called in fork's handler and in a vfork child.
inline void count_child_process() { g_child_processes.fetch_add(1, std::memory_order_relaxed); }

inline uint64_t child_processes() { return g_child_processes.load(std::memory_order_relaxed); }

}  // namespace memprof::agent
