// A process and its descendants, for --children: a preforking server (puma cluster, unicorn) is
// a master and its workers, and the question is usually about all of them.
#pragma once

#include <sys/types.h>

#include <vector>

namespace memprof::attach {

// `pid` first, then its descendants (from /proc/PID/task/TID/children), parents before children.
std::vector<pid_t> process_tree(pid_t pid);

// `pid` alone, or the whole tree when `children` is set.
inline std::vector<pid_t> targets(pid_t pid, bool children) {
  return children ? process_tree(pid) : std::vector<pid_t>{pid};
}

}  // namespace memprof::attach
