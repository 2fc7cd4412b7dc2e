#include "agent/request_handler.h"

#include <dlfcn.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

#include "core/util/child_progress.h"
#include "agent/ruby_calls.h"
#include "core/util/json_escape.h"

namespace memprof::agent {

namespace {

// In the process's memory, so that a forked child's agent knows them too and can start its own
// Ruby thread (the parent's does not survive fork).
bool g_memprof_loaded = false;
std::string* g_lib_file = nullptr;
std::string* g_extension_file = nullptr;

constexpr const char* kAgentVersion = "0.1.0";

// What a wait for the forked child's next bytes ended with.
struct ChildWait {
  enum Outcome { kOutput, kStalled, kRequesterGone } outcome;
  std::string stall;  // kStalled: how it sat ("made no progress for 30 s (asleep in ...)")
};

// Waits for the next bytes of the child's reply, sampling its progress between them: stalled
// when the child has slept for `stall_limit` without CPU time or I/O (child_progress.h). The
// requester's `connection` was read whole, so any event there is its end (memprof dump
// interrupted by Ctrl-C: the dump went on to its end before).
ChildWait wait_for_output(const ForkedHandler& child, std::chrono::milliseconds stall_limit, int connection) {
  StallWatch watch(stall_limit);
  const int tick_ms = static_cast<int>(std::clamp<int64_t>(stall_limit.count() / 4, 50, 1000));
  for (;;) {
    pollfd watched[2] = {{child.output.get(), POLLIN, 0}, {connection, POLLIN | POLLRDHUP, 0}};
    int ready = ::poll(watched, connection >= 0 ? 2 : 1, tick_ms);
    if (ready > 0 && watched[1].revents != 0 && watched[0].revents == 0) return {ChildWait::kRequesterGone, {}};
    if (ready > 0 || (ready < 0 && errno != EINTR)) return {ChildWait::kOutput, {}};
    std::optional<ChildProgress> progress = read_child_progress(child.pid);
    if (!progress) return {ChildWait::kOutput, {}};  // gone: the read sees EOF
    if (watch.stalled(*progress, std::chrono::steady_clock::now())) return {ChildWait::kStalled, watch.describe(*progress)};
  }
}

Error requester_gone(pid_t child) {
  return err("the requester went away (interrupted): the forked child (pid {}) was stopped", child);
}

// Before its kChildReady a child can hang on a lock that one of the parent's other threads
// held at the fork: Ruby 3.4's rb_thread_atfork locks every other thread's interrupt_lock,
// which a thread going to sleep holds for a moment without the GVL (ruby/ruby#12981; seen in
// 1 dump of 20-60 of an app whose 4 threads sleep often). That step takes milliseconds, so a
// second asleep without CPU time is a hang.
constexpr std::chrono::milliseconds kStartStallLimit{1000};
constexpr int kForkAttempts = 3;

// Whether the child got past the fork's hazards (it wrote kChildReady); a child that hung
// before is killed and reaped, and the answer is false.
Result<bool> child_started(const ForkedHandler& child, int connection) {
  for (;;) {
    const ChildWait wait = wait_for_output(child, kStartStallLimit, connection);
    if (wait.outcome == ChildWait::kRequesterGone) {
      kill_and_reap(child.pid);
      return requester_gone(child.pid);
    }
    if (wait.outcome == ChildWait::kStalled) {
      kill_and_reap(child.pid);
      return false;
    }
    char byte = 0;
    const ssize_t n = ::read(child.output.get(), &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    // Ended before it was ready (killed by someone): collect_child reads the same end.
    if (n <= 0) return true;
    if (byte == kChildReady) return true;
    kill_and_reap(child.pid);
    return err("the forked child (pid {}) began its reply with {:#04x}, not its ready byte", child.pid,
               static_cast<unsigned char>(byte));
  }
}

// Reads the child's reply to EOF (bounded), then reaps it. A server that reaps every child
// itself (waitpid(-1), as unicorn's master does) may take the status first: then the reply
// decides. A stalled child is killed: while its write end is open it has not exited, so its
// pid is still its own.
Result<std::string> collect_child(ForkedHandler& child, std::chrono::milliseconds stall_limit, int connection) {
  std::string output;
  Status failure = ok_status();
  char buffer[65536];
  for (;;) {
    const ChildWait wait = wait_for_output(child, stall_limit, connection);
    if (wait.outcome == ChildWait::kRequesterGone) failure = requester_gone(child.pid);
    if (wait.outcome == ChildWait::kStalled)
      failure = err("the forked child (pid {}) {} and was killed", child.pid, wait.stall);
    if (!failure.ok()) {
      ::kill(child.pid, SIGKILL);
      break;
    }
    ssize_t n = ::read(child.output.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (output.size() + static_cast<size_t>(n) > kMaxReplyBytes / 2) {
      failure = err("the forked child's reply is over {} bytes", kMaxReplyBytes / 2);
      break;
    }
    output.append(buffer, static_cast<size_t>(n));
  }
  int status = 0;
  pid_t reaped;
  do {
    reaped = ::waitpid(child.pid, &status, __WALL);
  } while (reaped < 0 && errno == EINTR);
  if (!failure.ok()) return failure.error();
  bool failed = reaped == child.pid && !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (failed || output.empty() || output[0] != '{')
    return err("{}", output.empty() ? "the forked child ended without a reply" : output);
  return output;
}

// "STALL_MS\nCOMMAND"
Result<std::pair<std::chrono::milliseconds, std::string>> parse_fork_request(
    const std::string& body) {
  size_t newline = body.find('\n');
  uint64_t stall_ms = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + std::min(newline, body.size()),
                                   stall_ms);
  if (newline == std::string::npos || ec != std::errc() || end != body.data() + newline ||
      stall_ms == 0)
    return err("malformed fork-ruby request (expected STALL_MS, a newline, the command)");
  return std::pair{std::chrono::milliseconds(stall_ms), body.substr(newline + 1)};
}

}  // namespace

bool memprof_loaded() { return g_memprof_loaded; }

std::string RequestHandler::handle(const Request& request, int connection) {
  connection_ = connection;
  Result<std::string> reply = [&]() -> Result<std::string> {
    if (request.verb == "hello") return hello();
    if (request.verb == "load") return load(request.body);
    if (request.verb == "ruby") return ruby_command(request.body);
    if (request.verb == "fork-ruby") return fork_ruby_command(request.body);
    if (request.verb == "detach") return detach();
    if (request.verb.starts_with("trace-") || request.verb.starts_with("native-"))
      return sessions_->handle(request.verb, request.body);
    return err("unknown request '{}'", request.verb);
  }();
  return reply.ok() ? encode_reply_ok(*reply) : encode_reply_error(reply.message());
}

// Whether the gem's tracker records allocations now, as JSON: null without the gem, or with an
// extension that predates the question. The gem may be loaded without tracking: `memprof dump`
// loads it only to write the dump.
std::string tracking_json() {
  if (!g_memprof_loaded) return "null";
  using Tracking = int (*)();
  const auto tracking = reinterpret_cast<Tracking>(dlsym(RTLD_DEFAULT, "memprof_tracking"));
  if (tracking == nullptr) return "null";
  return tracking() != 0 ? "true" : "false";
}

Result<std::string> RequestHandler::hello() const {
  std::string ruby = ruby_ != nullptr ? json_quoted(ruby_->version()) : "null";
  return fmt::format(R"({{"pid":{},"agent":"{}","ruby":{},"ruby_ready":{},"memprof_loaded":{},"tracking":{}}})",
                     ::getpid(), kAgentVersion, ruby, ruby_ != nullptr && ruby_->vm_ready(), g_memprof_loaded,
                     tracking_json());
}

Status RequestHandler::require_memprof() const {
  if (ruby_ == nullptr) return err("{}", kNoSupportedRuby);
  // The agent alone: loaded by trace, native or `run --no-track`, or by an attach that gave up
  // waiting for Ruby (a long call that held the GVL).
  if (!g_memprof_loaded)
    return err("the memprof agent is loaded but does not track Ruby objects (trace, native and run "
               "--no-track load it alone, and an attach that did not finish leaves it so): run memprof "
               "attach first");
  return ok_status();
}

Status RequestHandler::ensure_service() {
  MEMPROF_TRY_STATUS(require_memprof());
  return start_service();
}

Status RequestHandler::start_service() {
  watch_vm_end();
  return service_->start(*g_lib_file, *g_extension_file, kRubyTimeout, kRubyThreadTimeout);
}

void RequestHandler::watch_vm_end() {
  // Without it (a Ruby with no ruby_vm_destruct, a child forked mid-change) jobs are posted as
  // before: no reason to refuse the request.
  (void)ruby_->watch_vm_end();
}

Result<std::string> RequestHandler::load(const std::string& body) {
  if (ruby_ == nullptr) return err("{}", kNoSupportedRuby);
  size_t newline = body.find('\n');
  if (newline == std::string::npos) return err("malformed load request");
  bool fresh = !g_memprof_loaded;
  if (fresh) {
    g_lib_file = new std::string(body.substr(0, newline));
    g_extension_file = new std::string(body.substr(newline + 1));
  }
  MEMPROF_TRY_STATUS(start_service());
  g_memprof_loaded = true;
  return fmt::format(R"({{"loaded":{}}})", fresh);
}

Result<std::string> RequestHandler::ruby_command(const std::string& command) {
  MEMPROF_TRY_STATUS(ensure_service());
  return service_->call(command, kRubyThreadTimeout);
}

Result<std::string> RequestHandler::fork_ruby_command(const std::string& body) {
  MEMPROF_TRY(request, parse_fork_request(body));
  auto& [stall_limit, command] = request;
  MEMPROF_TRY_STATUS(require_memprof());
  watch_vm_end();
  std::optional<ForkedHandler> child;
  std::chrono::microseconds fork_time{0};
  Result<std::string> reply = std::string();
  int forks = 0;
  for (;;) {
    ++forks;
    MEMPROF_TRY_STATUS(ruby_->run(
        [&](const RubyApi& api) -> Result<std::string> {
          auto forked = fork_and_handle(api, command);
          if (!forked.ok()) return forked.error();
          child = std::move(*forked);
          return std::string();
        },
        kRubyTimeout));
    fork_time += child->fork_time;
    auto started = child_started(*child, connection_);
    if (!started.ok()) {
      reply = started.error();
      break;
    }
    if (*started) {
      reply = collect_child(*child, stall_limit, connection_);
      break;
    }
    // It wrote nothing: there is nothing to clean up after it.
    if (forks == kForkAttempts)
      return err("the forked child hung before it could start, {} times in a row (pid {} the last): it waited "
                 "on a lock that another thread of the process held at the fork (on Ruby 3.4, a thread's "
                 "interrupt_lock: ruby/ruby#12981); the process is unchanged, try again",
                 kForkAttempts, child->pid);
  }
  if (!reply.ok()) {
    // A child that was killed (here, or by a signal of its own) leaves what it was writing
    // behind; one that failed in Ruby has removed it already, and this finds nothing.
    auto cleaned = ruby_->run(
        [&](const RubyApi& api) -> Result<std::string> {
          MEMPROF_TRY_STATUS(clean_up_after_child(api, command, child->pid));
          return std::string();
        },
        kRubyTimeout);
    if (!cleaned.ok()) return err("{}; {}", reply.message(), cleaned.message());
  }
  if (!reply.ok()) return reply.error();
  return fmt::format(R"({{"child":{},"fork_us":{},"forks":{},"reply":{}}})", child->pid, fork_time.count(),
                     forks, *reply);
}

Result<std::string> RequestHandler::detach() {
  detach_requested_ = true;
  sessions_->end_all();
  if (ruby_ == nullptr) return std::string("{\"stopped\":false}");
  Result<std::string> stopped = std::string("{\"stopped\":false}");
  if (g_memprof_loaded) {
    stopped = ruby_command("stop");
    service_->stop(kRubyThreadTimeout);
    // What the attach freed sits in malloc's fast bins, in small blocks; the first large
    // malloc of every child forked later (Ruby's own, at the fork) consolidated all of them,
    // touching -- and so copying -- the pages they are on: a fork and exit! took 10.8 ms after
    // a detach instead of 3.9. Consolidated once here, in the parent.
    (void)::malloc_trim(0);
  }
  ruby_->release_vm_end_watch();  // the last patched bytes
  return stopped;
}

void RequestHandler::adopt_preloaded_gem(const std::string& lib_file) {
  if (g_memprof_loaded) return;
  g_lib_file = new std::string(lib_file);
  g_extension_file = new std::string();  // unused: the program has the gem already
  g_memprof_loaded = true;
}

}  // namespace memprof::agent
