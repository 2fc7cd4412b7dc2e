// A child process for work that the app's other threads must not interleave with:
// Memprof.dump_all's on Ruby 3.1-3.3, whose ObjectSpace.dump_all writes through Ruby's IO
// (lib/memprof/child_dump.rb says why that matters).
//
// The child is made by fork(2), not Process.fork: the app's fork hooks (Process._fork: Rails
// reconnecting databases, agents starting threads) are not run for a child that only writes a
// file and ends. It forgets Ruby's other threads at once, as Process.fork's child does
// (rb_thread_atfork): Ruby's scheduler would otherwise hand the GVL, at the child's first
// blocking call, to a thread that does not exist there. Before that it reads the roots and what
// the other threads hold, and after it turns GC off (heap_at_fork.h). It answers its parent with one frame
// (core/util/frame_length.h) on a pipe and ends with _exit: at_exit blocks, finalizers and
// buffered output are the parent's.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/util/result.h"
#include "core/util/scoped_fd.h"
#include "ruby/ruby_headers.h"

namespace memprof::ruby {

struct ForkedChild {
  pid_t pid = -1;
  ScopedFd answer;  // the read end of the pipe the child writes its frame to
};

// Forks. In the child, records what `changed` holds (the Ractor and its threads, this one among
// them or not) and the roots, this thread's only from its frames above `app_frames_end`
// (heap_at_fork.h), then calls `work(arg)` (which must not raise: the caller wraps Ruby code in
// rb_protect), sends the bytes it returns, and ends (status 0; 1 when `work` reports a failure
// by returning false, after which nothing is sent); never returns there. In the parent, returns
// the child. Fails when fork(2) or pipe(2) does (no process is left behind).
using ChildWork = bool (*)(void* arg, std::string* answer);
Result<ForkedChild> fork_child(const std::vector<VALUE>& changed, const void* app_frames_end, ChildWork work,
                               void* arg);

// How a child that sent no complete answer ended, in words ("ended by signal 9 (Killed)", "ended
// with status 1", or "was reaped by someone else" when the app's own wait took it first).
// Waits for it (a child that closed its pipe is ending).
std::string wait_for_end(pid_t pid);

// In a child just forked to write a dump (here, or by the attach agent): records what `changed`
// holds and the roots (`app_frames_end` as in heap_at_fork.h, or null), forgets Ruby's other
// threads and turns GC off.
void prepare_dump_child(std::vector<VALUE> changed, const void* app_frames_end) noexcept;

}  // namespace memprof::ruby
