// The agent's control protocol, shared by the agent (inside the target) and the CLI.
//
// Transport: a Unix stream socket at /tmp/memprof-UID/PID.sock, made by the agent in a directory
// only UID may enter (0700), the socket itself 0600; the agent also checks SO_PEERCRED.
//
// Messages are frames: a 4-byte little-endian length, then that many bytes. A request is
// "<verb>\n<body>"; a reply is "ok\n<body>" or "error\n<one sentence>". Bodies are text (the
// Ruby side answers in JSON). Sizes are bounded on both sides, so a malformed or hostile peer
// costs an error reply, never unbounded memory.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>

#include "core/util/result.h"

namespace memprof::agent {

inline constexpr size_t kMaxRequestBytes = 64 * 1024;
inline constexpr size_t kMaxReplyBytes = 64 * 1024 * 1024;

// /tmp/memprof-UID: the per-user directory of agent sockets.
std::string socket_directory(uid_t uid);
// /tmp/memprof-UID/PID.sock
std::string socket_path(uid_t uid, pid_t pid);
// /tmp/memprof-UID/PID.follow: the pid of a CLI that records the command it launched as PID and
// follows it through exec. While it is there and that CLI lives, a program PID execs waits
// before its first instruction for the recording to start again (src/agent/agent.cc).
std::string follow_marker_path(uid_t uid, pid_t pid);
// The marker's contents: the CLI's pid in decimal. Decoding gives 0 for anything else.
std::string encode_follow_marker(pid_t cli);
pid_t decode_follow_marker(std::string_view text);

// Set by `memprof trace -- CMD` and `memprof native -- CMD` in the command's environment: "1"
// makes the agent of the launched program hold its first instruction until a recording starts;
// the agent then replaces it with the launched pid, so that only programs that pid execs hold.
inline constexpr const char* kTraceHoldVariable = "MEMPROF_TRACE_HOLD";

// Writes one frame to a socket or a pipe. Handles short writes and EINTR; never raises SIGPIPE
// on a socket.
Status write_frame(int fd, std::string_view payload);
// Reads one frame of at most `max_bytes`, waiting at most `timeout` for each part. A peer that
// closed the connection before the first byte is "connection closed".
Result<std::string> read_frame(int fd, size_t max_bytes, std::chrono::milliseconds timeout);

struct Request {
  std::string verb;
  std::string body;
};
std::string encode_request(std::string_view verb, std::string_view body = {});
Result<Request> decode_request(std::string_view frame);

std::string encode_reply_ok(std::string_view body);
std::string encode_reply_error(std::string_view message);
// The body of an "ok" reply, or the error it carries.
Result<std::string> decode_reply(std::string_view frame);

}  // namespace memprof::agent
