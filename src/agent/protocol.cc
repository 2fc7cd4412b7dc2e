#include "agent/protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "core/util/frame_length.h"

namespace memprof::agent {

std::string socket_directory(uid_t uid) { return fmt::format("/tmp/memprof-{}", uid); }

std::string socket_path(uid_t uid, pid_t pid) {
  return fmt::format("{}/{}.sock", socket_directory(uid), pid);
}

std::string follow_marker_path(uid_t uid, pid_t pid) {
  return fmt::format("{}/{}.follow", socket_directory(uid), pid);
}

std::string encode_follow_marker(pid_t cli) { return std::to_string(cli); }

pid_t decode_follow_marker(std::string_view text) {
  pid_t cli = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), cli);
  return error == std::errc() && end == text.data() + text.size() && cli > 0 ? cli : 0;
}

namespace {

Status wait_readable(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (n > 0) return ok_status();
    if (n == 0) return err("timed out after {} ms", timeout.count());
    if (errno != EINTR) return err("poll: {}", std::strerror(errno));
  }
}

// Fills `out` completely. `closed_before_any` tells an orderly close before the first byte.
Status read_exactly(int fd, char* out, size_t size, std::chrono::milliseconds timeout,
                    bool* closed_before_any) {
  size_t done = 0;
  while (done < size) {
    MEMPROF_TRY_STATUS(wait_readable(fd, timeout));
    ssize_t n = ::read(fd, out + done, size - done);
    if (n == 0) {
      if (done == 0 && closed_before_any != nullptr) *closed_before_any = true;
      return err("connection closed");
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      return err("read: {}", std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  return ok_status();
}

}  // namespace

Status write_frame(int fd, std::string_view payload) {
  if (payload.size() > UINT32_MAX) return err("message too large ({} bytes)", payload.size());
  auto size = static_cast<uint32_t>(payload.size());
  auto header = util::encode_frame_length(size);
  std::string_view parts[2] = {{reinterpret_cast<const char*>(header.data()), header.size()},
                               payload};
  for (std::string_view part : parts) {
    while (!part.empty()) {
      // send() on sockets, for MSG_NOSIGNAL; write() on pipes (the agent's threads block
      // SIGPIPE, so a closed pipe is EPIPE there too).
      ssize_t n = ::send(fd, part.data(), part.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == ENOTSOCK) n = ::write(fd, part.data(), part.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return err("write: {}", std::strerror(errno));
      }
      part.remove_prefix(static_cast<size_t>(n));
    }
  }
  return ok_status();
}

Result<std::string> read_frame(int fd, size_t max_bytes, std::chrono::milliseconds timeout) {
  unsigned char header[util::kFrameLengthBytes];
  MEMPROF_TRY_STATUS(
      read_exactly(fd, reinterpret_cast<char*>(header), sizeof header, timeout, nullptr));
  uint32_t size = util::decode_frame_length(header);
  if (size > max_bytes) return err("message of {} bytes is over the limit of {}", size, max_bytes);
  std::string payload(size, '\0');
  MEMPROF_TRY_STATUS(read_exactly(fd, payload.data(), size, timeout, nullptr));
  return payload;
}

std::string encode_request(std::string_view verb, std::string_view body) {
  std::string out(verb);
  out += '\n';
  out += body;
  return out;
}

Result<Request> decode_request(std::string_view frame) {
  size_t newline = frame.find('\n');
  if (newline == std::string_view::npos || newline == 0 || newline > 32)
    return err("malformed request (expected a verb line)");
  return Request{std::string(frame.substr(0, newline)), std::string(frame.substr(newline + 1))};
}

std::string encode_reply_ok(std::string_view body) { return encode_request("ok", body); }
std::string encode_reply_error(std::string_view message) { return encode_request("error", message); }

Result<std::string> decode_reply(std::string_view frame) {
  auto decoded = decode_request(frame);
  if (!decoded.ok()) return err("malformed reply from the agent");
  if (decoded->verb == "ok") return std::move(decoded->body);
  if (decoded->verb == "error") return Error{std::move(decoded->body)};
  return err("malformed reply from the agent (status '{}')", decoded->verb);
}

}  // namespace memprof::agent
