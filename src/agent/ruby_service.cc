#include "agent/ruby_service.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/protocol.h"
#include "agent/ruby_calls.h"

namespace memprof::agent {

namespace {

Status make_pipe(ScopedFd& read_end, ScopedFd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return err("pipe: {}", std::strerror(errno));
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  return ok_status();
}

}  // namespace

Status RubyService::start(const std::string& lib_file, const std::string& extension_file,
                          std::chrono::milliseconds job_timeout,
                          std::chrono::milliseconds thread_timeout) {
  if (running()) return ok_status();
  MEMPROF_TRY_STATUS(make_pipe(request_read_, request_write_));
  MEMPROF_TRY_STATUS(make_pipe(reply_read_, reply_write_));
  int request_fd = request_read_.get(), reply_fd = reply_write_.get();
  auto started = runtime_.run(
      [&](const RubyApi& api) -> Result<std::string> {
        MEMPROF_TRY_STATUS(start_ruby_thread(api, lib_file, extension_file, request_fd, reply_fd));
        return std::string();
      },
      job_timeout);
  if (!started.ok()) {
    close_all();  // the job never ran and never will (RubyRuntime::run)
    return started.error();
  }
  auto ready = read_reply(0, thread_timeout);
  if (!ready.ok()) {
    // The thread may still run later: leave it its descriptors, so it never reads or writes a
    // number that something else has reused.
    abandon_ruby_ends();
    close_all();
    return ready.error();
  }
  return ok_status();
}

Result<std::string> RubyService::call(const std::string& command,
                                      std::chrono::milliseconds timeout) {
  if (!running()) return err("memprof's Ruby thread is not running");
  uint64_t id = next_id_++;
  MEMPROF_TRY_STATUS(write_frame(request_write_.get(), fmt::format("{}\n{}", id, command)));
  return read_reply(id, timeout);
}

Result<std::string> RubyService::read_reply(uint64_t id, std::chrono::milliseconds timeout) {
  for (;;) {
    auto frame = read_frame(reply_read_.get(), kMaxReplyBytes, timeout);
    if (!frame.ok()) {
      if (frame.message().rfind("timed out", 0) == 0)
        return err("waiting for Ruby: memprof's Ruby thread has not run for {} s (the main "
                   "thread is {})",
                   timeout.count() / 1000.0, describe_main_thread());
      return err("memprof's Ruby thread: {}", frame.message());
    }
    size_t newline = frame->find('\n');
    if (newline == std::string::npos) return err("malformed reply from memprof's Ruby thread");
    if (std::strtoull(frame->c_str(), nullptr, 10) != id) continue;  // a late, abandoned reply
    return decode_reply(std::string_view(*frame).substr(newline + 1));
  }
}

void RubyService::stop(std::chrono::milliseconds timeout) {
  if (!running()) return;
  // The thread's descriptors are closed only once it has said it is done with them.
  if (!call("quit", timeout).ok()) abandon_ruby_ends();
  close_all();
}

void RubyService::reset_after_fork() { close_all(); }

void RubyService::abandon_ruby_ends() {
  (void)request_read_.release();
  (void)reply_write_.release();
}

void RubyService::close_all() {
  request_write_.reset();
  request_read_.reset();
  reply_write_.reset();
  reply_read_.reset();
}

}  // namespace memprof::agent
