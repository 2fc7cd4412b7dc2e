// The CLI's side of the agent's socket (src/agent/protocol.h): one request per connection, so
// that `memprof top` in one terminal never makes `memprof stats` in another wait.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>

#include "core/util/result.h"

namespace memprof::attach {

// Whether process `pid` has a live agent socket (it answers a connection).
bool agent_listening(pid_t pid);

// Sends one request to the agent of `pid` and returns the body of its "ok" reply. Errors name
// the process: no agent ("memprof attach -p PID" first), a socket owned by another uid, a
// reply not received within `timeout`.
Result<std::string> agent_request(pid_t pid, std::string_view verb, std::string_view body = {},
                                  std::chrono::milliseconds timeout = std::chrono::seconds(90));

// For the Ruby commands: Memprof::Agent.handle(command) in the target, its JSON reply.
Result<std::string> ruby_request(pid_t pid, std::string_view command,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(90));

}  // namespace memprof::attach
