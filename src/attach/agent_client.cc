#include "attach/agent_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agent/protocol.h"
#include "attach/ruby_target.h"
#include "core/proc/maps.h"
#include "core/proc/process_access.h"
#include "core/proc/process_view.h"
#include "core/util/print_stderr.h"
#include "core/util/scoped_fd.h"
#include "inject/preflight.h"

namespace memprof::attach {

namespace {

// Another user's process, to a memprof without the rights to it: the agent's directory (0700)
// and socket (0600) are that user's, and the process's maps are hidden. Whether the directory
// exists (it does once any process of that uid ran an agent) changes nothing for the user: one
// sentence for all of these cases.
Error other_users_process(pid_t pid, uid_t uid) {
  return err("permission denied: process {} belongs to uid {} and memprof runs as uid {}: only that user "
             "or root can reach or attach its agent",
             pid, uid, ::geteuid());
}

// No agent answers: attach starts one, in a Ruby process. Elsewhere attach would refuse, and
// only the commands that inject the agent themselves (native, trace) apply. `explain` false:
// the caller only wants to know (polls), the maps and executable are not read.
Error no_agent(pid_t pid, bool explain) {
  if (!explain) return err("no memprof agent in process {}", pid);
  // Another user's process hides its maps: whether it runs Ruby is then not known, and only
  // that user or root can attach it.
  if (!proc::read_maps(pid).ok()) {
    if (auto uid = proc::process_uid(pid); uid && *uid != ::geteuid()) return other_users_process(pid, *uid);
  } else if (!find_ruby(pid).ok()) {
    return err("no memprof agent in process {}, which is not running Ruby: attach, stats, top and dump "
               "need Ruby; native and trace work on any process",
               pid);
  }
  return err("no memprof agent in process {} (run: memprof attach -p {})", pid, pid);
}

// The agent's socket as this process reaches it: the agent names it with its own pid, in its
// own /tmp (a systemd service with PrivateTmp, a process in a pid namespace of its own).
std::string agent_socket(pid_t pid, uid_t uid) {
  return proc::path_from_here(pid, agent::socket_path(uid, proc::pid_inside(pid)));
}

Result<ScopedFd> connect_to_agent(pid_t pid, bool explain = true) {
  MEMPROF_TRY_STATUS(proc::check_process_exists(pid));
  MEMPROF_TRY_STATUS(inject::check_process_can_answer(pid));
  auto uid = proc::process_uid(pid);
  if (!uid) return err("cannot read the owner of process {}", pid);
  std::string path = agent_socket(pid, *uid);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    // Another user's 0700 directory hides whether there is a socket at all.
    if (errno == EACCES) return other_users_process(pid, *uid);
    return no_agent(pid, explain);
  }
  if (!S_ISSOCK(st.st_mode) || st.st_uid != *uid)
    return err("{} is not the agent's socket: it belongs to uid {}, and process {} runs as uid "
               "{}; remove it and attach again",
               path, st.st_uid, pid, *uid);
  ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return err("socket: {}", std::strerror(errno));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path))
    return err("cannot connect to {}: longer than a socket path may be", path);
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    if (errno == EACCES || errno == EPERM) return other_users_process(pid, *uid);
    // Nobody listens: a socket left by an earlier process with this pid (killed before it
    // could remove it), or an agent between bind and listen. Not removed here for that reason.
    if (errno == ECONNREFUSED) return no_agent(pid, explain);
    return err("no memprof agent answering in process {} ({}: {}; run: memprof attach -p {})",
               pid, path, std::strerror(errno), pid);
  }
  return fd;
}

// A request met a closed connection: the process may have ended (exited, killed). Its sockets
// close as it exits, a moment before /proc shows it ended, so this waits up to 0.5 s for that.
bool ended_meanwhile(pid_t pid) {
  for (int i = 0; i < 50; ++i) {
    if (proc::process_gone(pid)) return true;
    ::usleep(10'000);
  }
  return false;
}

}  // namespace

bool agent_listening(pid_t pid) { return connect_to_agent(pid, /*explain=*/false).ok(); }

AgentSocketFile agent_socket_file(pid_t pid) {
  auto uid = proc::process_uid(pid);
  struct stat st {};
  if (!uid || ::lstat(agent_socket(pid, *uid).c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return {};
  return {st.st_ino, int64_t{st.st_ctim.tv_sec} * 1'000'000'000 + st.st_ctim.tv_nsec};
}

namespace {

// How long Ruby work may take before the wait is said (a request answers in milliseconds).
constexpr std::chrono::seconds kSayWaitingAfter{3};

// Waits for the reply to begin, in slices of half a second: a process stopped meanwhile
// (SIGSTOP, Ctrl-Z, a debugger; or a SIGSTOP not yet delivered when the request checked) cannot
// answer, and is said so at once instead of after the whole timeout; Ruby work late by
// kSayWaitingAfter is said once. Ok once the reply has begun (or poll failed: read_frame
// reports it).
Status wait_for_reply(int fd, pid_t pid, std::chrono::milliseconds timeout, RunsIn runs_in) {
  using std::chrono::milliseconds;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  bool say_when_late = runs_in == RunsIn::kRuby;  // once
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - now);
    if (left <= milliseconds(0))
      return err("process {}: no reply from the agent: timed out after {} ms", pid, timeout.count());
    if (say_when_late && now - start >= kSayWaitingAfter) {
      say_when_late = false;
      print_stderr("memprof: process {} has not answered in {} s: Ruby runs memprof's request between two "
                   "steps of Ruby code, and its main thread may be in a long call that holds the GVL (C "
                   "code, a C extension); still waiting\n",
                   pid, kSayWaitingAfter.count());
    }
    pollfd readable{fd, POLLIN, 0};
    const int n = ::poll(&readable, 1, static_cast<int>(std::min(left, milliseconds(500)).count()));
    if (n != 0 && !(n < 0 && errno == EINTR)) return ok_status();
    MEMPROF_TRY_STATUS(inject::check_process_can_answer(pid));
  }
}

// `watch_process`: a process that stops or ends before it answers is said so (see
// recording_request for why trace and native do without).
Result<std::string> send_request(pid_t pid, std::string_view verb, std::string_view body,
                                 std::chrono::milliseconds timeout, bool watch_process,
                                 RunsIn runs_in = RunsIn::kAgent) {
  MEMPROF_TRY(fd, connect_to_agent(pid));
  // An agent that refuses the connection (another uid) writes its reason and closes at once,
  // so the request may meet a closed socket: the reason is still there to read.
  Status written = agent::write_frame(fd.get(), agent::encode_request(verb, body));
  if (watch_process) MEMPROF_TRY_STATUS(wait_for_reply(fd.get(), pid, timeout, runs_in));
  auto frame = agent::read_frame(fd.get(), agent::kMaxReplyBytes, timeout);
  if (!frame.ok()) {
    if (watch_process && ended_meanwhile(pid)) return err("process {} ended before its agent answered", pid);
    if (!written.ok()) return err("process {}: {}", pid, written.message());
    return err("process {}: no reply from the agent: {}", pid, frame.message());
  }
  auto reply = agent::decode_reply(*frame);
  if (!reply.ok()) return err("process {}: {}", pid, reply.message());
  return reply;
}

}  // namespace

Result<std::string> agent_request(pid_t pid, std::string_view verb, std::string_view body,
                                  std::chrono::milliseconds timeout, RunsIn runs_in) {
  return send_request(pid, verb, body, timeout, /*watch_process=*/true, runs_in);
}

Result<std::string> recording_request(pid_t pid, std::string_view verb, std::string_view body,
                                      std::chrono::milliseconds timeout) {
  return send_request(pid, verb, body, timeout, /*watch_process=*/false);
}

Result<std::string> ruby_request(pid_t pid, std::string_view command,
                                 std::chrono::milliseconds timeout) {
  return agent_request(pid, "ruby", command, timeout, RunsIn::kRuby);
}

}  // namespace memprof::attach
