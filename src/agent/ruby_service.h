// memprof's Ruby thread inside the target, and the agent's side of its pipes.
//
// A postponed job starts the thread (ruby_calls.h); from then on requests go through a pipe to
// the thread and replies come back through another, as frames (protocol.h) whose payload is
// "ID\n" followed by a reply ("ok\nJSON" or "error\nmessage"). IDs let the agent drop the late
// reply of a request it stopped waiting for. The thread blocks in IO#read without the GVL, so it
// costs nothing while idle; Ruby runs it like any other thread when there is work.
#pragma once

#include <chrono>
#include <string>

#include "agent/ruby_runtime.h"
#include "core/util/scoped_fd.h"

namespace memprof::agent {

class RubyService {
 public:
  explicit RubyService(RubyRuntime& runtime) : runtime_(runtime) {}
  RubyService(const RubyService&) = delete;
  RubyService& operator=(const RubyService&) = delete;

  bool running() const { return request_write_.valid(); }
  // Starts the thread (loading the gem) unless it runs, and waits until it is ready: `job_timeout`
  // for Ruby to run the job that starts it, `thread_timeout` for the thread to load the gem.
  Status start(const std::string& lib_file, const std::string& extension_file,
               std::chrono::milliseconds job_timeout, std::chrono::milliseconds thread_timeout);
  // Memprof::Agent.handle(command) on the thread: its JSON reply.
  Result<std::string> call(const std::string& command, std::chrono::milliseconds timeout);
  // Ends the thread (it answers "quit" and returns) and closes the pipes.
  void stop(std::chrono::milliseconds timeout);
  // In a forked child the thread is gone (only the forking thread survives fork): forget it and
  // close the inherited pipes; start() makes a new one.
  void reset_after_fork();

 private:
  Result<std::string> read_reply(uint64_t id, std::chrono::milliseconds timeout);
  void abandon_ruby_ends();
  void close_all();

  RubyRuntime& runtime_;
  ScopedFd request_write_, request_read_, reply_write_, reply_read_;
  uint64_t next_id_ = 1;
};

}  // namespace memprof::agent
