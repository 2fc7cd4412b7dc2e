// The threads of a process (/proc/PID/task).
#pragma once

#include <sys/types.h>

#include <vector>

namespace memprof::proc {

// Thread ids of `pid`, the thread group leader (`pid` itself) first, then the others in
// ascending order; empty when the process is gone or unreadable. Threads come and go meanwhile.
std::vector<pid_t> process_threads(pid_t pid);

}  // namespace memprof::proc
