// --children: a command run on a process and each of its descendants (a preforking server's
// master and workers). A process of the tree it cannot act on -- a worker that has just ended
// or is a zombie, a wrapper that does not run Ruby (`sh -c`, a shim) -- is left out with a note
// on stderr; the command fails only when it could act on none of them.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attach/process_tree.h"
#include "cli/command.h"
#include "core/util/result.h"

namespace memprof::cli {

// `one(pid)` acts on one process (printing what it did) and returns its Status.
template <typename ForOne>
int for_each_target(pid_t pid, bool children, ForOne one) {
  if (!children) {
    Status status = one(pid);
    return status.ok() ? 0 : fail(status.message());
  }
  size_t done = 0;
  for (pid_t target : attach::process_tree(pid)) {
    Status status = one(target);
    if (status.ok()) {
      ++done;
    } else {
      fmt::print(stderr, "memprof: left out process {}: {}\n", target, status.message());
    }
  }
  return done > 0 ? 0 : fail(fmt::format("no process of the tree of {} could be reached", pid));
}

// Says on stderr, once each, the processes readings of a tree left out (LiveSnapshot::left_out).
class LeftOutNotes {
 public:
  void say(const std::vector<std::string>& left_out) {
    for (const std::string& note : left_out)
      if (said_.insert(note).second) fmt::print(stderr, "memprof: left out {}\n", note);
  }

 private:
  std::set<std::string> said_;
};

}  // namespace memprof::cli
