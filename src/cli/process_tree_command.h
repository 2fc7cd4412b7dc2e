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
#include <fmt/ranges.h>

#include "attach/process_tree.h"
#include "cli/command.h"
#include "core/util/json_escape.h"
#include "core/util/print_stderr.h"
#include "core/util/result.h"

namespace memprof::cli {

// `one(pid)` acts on one process and returns what to print about it: lines of text, or with
// `json` one JSON object (no newline). A tree's objects are printed as one array (a script reads one
// document), a process left out as {"pid": N, "error": "why"} there too.
template <typename ForOne>
int for_each_target(pid_t pid, bool children, bool json, ForOne one) {
  if (!children) {
    Result<std::string> said = one(pid);
    if (!said.ok()) return fail(said.message());
    fmt::print("{}{}", *said, json ? "\n" : "");
    return 0;
  }
  size_t done = 0;
  std::vector<std::string> objects;
  for (pid_t target : attach::process_tree(pid)) {
    Result<std::string> said = one(target);
    if (said.ok()) {
      ++done;
      if (json) objects.push_back(std::move(*said));
      else fmt::print("{}", *said);
    } else {
      print_stderr("memprof: left out process {}: {}\n", target, said.message());
      if (json) objects.push_back(fmt::format(R"({{"pid":{},"error":{}}})", target, json_quoted(said.message())));
    }
  }
  // The document even when every process was left out: a script reads why from it.
  if (json) fmt::print("[{}]\n", fmt::join(objects, ","));
  if (done == 0) return fail(fmt::format("no process of the tree of {} could be reached", pid));
  return 0;
}

// Says on stderr, once each, the processes readings of a tree left out (LiveSnapshot::left_out).
class LeftOutNotes {
 public:
  void say(const std::vector<std::string>& left_out) {
    for (const std::string& note : left_out)
      if (said_.insert(note).second) print_stderr("memprof: left out {}\n", note);
  }

 private:
  std::set<std::string> said_;
};

}  // namespace memprof::cli
