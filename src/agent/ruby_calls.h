// What the agent's postponed jobs do in Ruby (ruby_runtime.h). Jobs run in what Ruby calls trap
// context: Mutex#lock -- and with it every `require` through rubygems -- raises there. So a job
// does as little as possible: it starts memprof's own Ruby thread (ruby_service.h), which does
// the real work in ordinary context, or forks for a heap dump. Every call is wrapped in
// rb_protect: an exception comes back as an error value and never unwinds into the agent or the
// interrupted Ruby code.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "agent/ruby_runtime.h"
#include "core/util/scoped_fd.h"

namespace memprof::agent {

// Starts the Ruby thread "memprof-agent", which loads the memprof gem unless the process has it
// (lib/memprof.rb at `lib_file`, the extension built for this Ruby at `extension_file`), then
// serves framed requests from `request_fd` with replies on `reply_fd` (Memprof::Agent.serve in
// lib/memprof/agent.rb). Its first frame says whether loading worked.
Status start_ruby_thread(const RubyApi& api, const std::string& lib_file,
                         const std::string& extension_file, int request_fd, int reply_fd);

struct ForkedHandler {
  pid_t pid = 0;
  ScopedFd output;  // kChildReady, then the child's reply or its error message, then EOF
  std::chrono::microseconds fork_time{0};
};
// The first byte a forked child writes, once it has forgotten the parent's other threads: the
// step that can hang on a lock one of them held at the fork (request_handler.cc waits for it).
inline constexpr char kChildReady = '\x06';
// Forks; the child writes kChildReady, runs Memprof::Agent.handle(command), writes the reply
// (or the error) to a pipe and ends with _exit (0 when the handler succeeded), without running
// the parent's at_exit blocks, finalizers or fork hooks, and without an agent of its own. The
// Ruby process pauses only for the fork itself (`fork_time`).
Result<ForkedHandler> fork_and_handle(const RubyApi& api, const std::string& command);

// Removes what the child `child`, killed while it ran `command`, left behind (a dump's scratch
// files: Memprof::Agent.clean_up_after). Runs in the parent, in a postponed job.
Status clean_up_after_child(const RubyApi& api, const std::string& command, pid_t child);

// A full garbage collection, marking everything and sweeping at once, for `memprof native`'s
// last readout: the malloc blocks of objects no longer reachable are freed by it, not reported
// as live. rb_gc, not GC.start: GC.start runs finalizers at once on this thread, in trap context
// (a finalizer's Mutex#lock would raise there); rb_gc leaves them to Ruby's own deferred job, as
// any collection does. It does nothing while the app has disabled GC (GC.disable).
// {"ruby": true, "collections": N (0 or 1), "ms": TIME}
Result<std::string> collect_garbage(const RubyApi& api);

// A full collection when the Ruby process ends by itself, for `memprof native`'s last readout:
// an end proc (rb_set_end_proc), which Ruby runs on the main thread after the app's at_exit
// blocks, while the VM still lives (exit() comes after the VM is gone: too late for one). End
// procs cannot be removed (the agent's code stays mapped): registered once per process, it
// collects only while set_collection_at_exit(true) (a native session that asks for it; a forked
// child ends the copied session, which sets it false). Call the registration from a job.
Status register_collection_at_exit(const RubyApi& api);
void set_collection_at_exit(bool wanted) noexcept;
// How long the collection at the end took, in ms; negative while none ran.
double collection_at_exit_ms() noexcept;

// Set while the agent forks for a handler: the child must not start an agent (agent.cc).
bool forking_for_handler();

}  // namespace memprof::agent
