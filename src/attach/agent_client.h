// The CLI's side of the agent's socket (src/agent/protocol.h): one request per connection, so
// that `memprof top` in one terminal never makes `memprof stats` in another wait.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/util/result.h"

namespace memprof::attach {

// Whether process `pid` has a live agent socket (it answers a connection).
bool agent_listening(pid_t pid);
// Which socket file `pid`'s agent has bound. Each agent binds a file of its own (the inode
// number alone may be reused at once), so a different one is a new agent, where a connection
// alone can reach an old agent's socket that a forked child holds open until it closes it
// (see src/agent/agent.cc). None: inode 0.
struct AgentSocketFile {
  uint64_t inode = 0;
  int64_t created_ns = 0;  // st_ctim
  bool operator==(const AgentSocketFile&) const = default;
};
AgentSocketFile agent_socket_file(pid_t pid);

// Whether a request's work runs in Ruby (a Ruby command, loading the gem): Ruby runs it only
// between two steps of Ruby code, so a long call in C that holds the GVL delays the reply, and
// a reply that is late says so on stderr instead of leaving the user at a silent prompt.
enum class RunsIn { kAgent, kRuby };

// How long a request waits for its reply unless told otherwise.
inline constexpr std::chrono::seconds kReplyTimeout{90};

// Sends one request to the agent of `pid` and returns the body of its "ok" reply. Errors name
// the process: no agent ("memprof attach -p PID" first), a socket owned by another uid, a
// reply not received within `timeout`, a process that ended before it answered.
Result<std::string> agent_request(pid_t pid, std::string_view verb, std::string_view body = {},
                                  std::chrono::milliseconds timeout = kReplyTimeout,
                                  RunsIn runs_in = RunsIn::kAgent);

// As agent_request, for trace and native: a connection that closes before the reply is said
// as it is, at once. They tell an exec from an end themselves (RecordedProcess), which waiting
// for /proc to show an end would hide (a new program that ends quickly looks like an end).
Result<std::string> recording_request(pid_t pid, std::string_view verb, std::string_view body = {},
                                      std::chrono::milliseconds timeout = kReplyTimeout);

// For the Ruby commands: Memprof::Agent.handle(command) in the target, its JSON reply.
Result<std::string> ruby_request(pid_t pid, std::string_view command,
                                 std::chrono::milliseconds timeout = kReplyTimeout);

}  // namespace memprof::attach
