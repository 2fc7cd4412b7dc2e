// What the agent does for each request (protocol.h). Verbs:
//   hello              who is here: {"pid", "agent", "ruby", "ruby_ready", "memprof_loaded",
//                      "tracking" (null without the gem)}
//   load LIB\nEXT      starts memprof's Ruby thread, loading the gem (ruby_service.h); idempotent
//   ruby COMMAND       Memprof::Agent.handle(COMMAND) on that thread; its JSON reply
//   fork-ruby STALL_MS\nCOMMAND
//                      the same in a forked child (heap dumps): {"child", "fork_us", "forks",
//                      "reply"}; a child asleep for STALL_MS without CPU time or I/O is killed,
//                      and the reply says so (child_progress.h); one that hung on a lock held
//                      at the fork, before it started, is forked again, up to 3 forks in all
//                      (`fork_us` is their total)
//   detach             stops tracking and tracing; the agent then closes its socket and ends its thread
//   trace-start BODY, trace-read, trace-stop   memprof trace (recording_sessions.h)
//   native-start, native-read, native-gc, native-stop   memprof native (recording_sessions.h)
// Replies are built here and never throw: every failure is an "error" reply.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "agent/protocol.h"
#include "agent/recording_sessions.h"
#include "agent/ruby_runtime.h"
#include "agent/ruby_service.h"

namespace memprof::agent {

class RequestHandler {
 public:
  // `runtime` and `service` are null in a process without (a supported) Ruby.
  RequestHandler(RubyRuntime* runtime, RubyService* service)
      : ruby_(runtime), service_(service), sessions_(std::make_unique<RecordingSessions>(runtime)) {}

  // The reply frame's payload. `connection`: the requester's socket, watched while a request
  // waits long (a dump's child): a requester that went away (Ctrl-C) stops the work.
  std::string handle(const Request& request, int connection = -1);
  // The trace and native sessions (recording_sessions.h).
  RecordingSessions& sessions() { return *sessions_; }
  bool detach_requested() const { return detach_requested_; }

  // Launch mode (memprof run): the program loads the gem itself, at its start; the agent's Ruby
  // thread is started by the first request that needs it, long after boot (a thread started
  // while Ruby still boots races its boot).
  void adopt_preloaded_gem(const std::string& lib_file);

 private:
  Result<std::string> hello() const;
  Result<std::string> load(const std::string& body);
  Result<std::string> ruby_command(const std::string& command);
  Result<std::string> fork_ruby_command(const std::string& body);
  Result<std::string> detach();
  Status require_memprof() const;

  Status ensure_service();
  // Starts the gem's Ruby thread (ruby_service.h) unless it runs, watching the VM's end first.
  Status start_service();
  void watch_vm_end();

  RubyRuntime* ruby_;
  RubyService* service_;
  bool detach_requested_ = false;
  int connection_ = -1;  // the request being handled's (handle)
  // On the heap: a forked child ends its copy of them (agent.cc) once the thread whose stack
  // held this handler is gone, and glibc gives that stack to the child's next thread.
  std::unique_ptr<RecordingSessions> sessions_;
};

// How long a request waits for Ruby to run the agent's postponed job (ruby_runtime.h): when
// it has not run by then, the main thread is stuck somewhere, and the reply says where.
inline constexpr std::chrono::milliseconds kRubyTimeout{5000};
// How long a request waits for memprof's Ruby thread, which does run but shares the GVL: with
// eight busy threads it gets a 12 ms slice about every 800 ms (Ruby 3.1's GVL is a FIFO of
// 100 ms slices, and the thread's priority -3 keeps its own slices short for the app's sake).
inline constexpr std::chrono::milliseconds kRubyThreadTimeout{60000};


// Whether an agent has loaded the gem into this process (survives fork).
bool memprof_loaded();


}  // namespace memprof::agent
