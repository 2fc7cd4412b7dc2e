#include "ruby/forked_child.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "core/util/frame_length.h"
#include "core/util/stack_scrub.h"
#include "core/util/whole_lines.h"
#include "ruby/heap_at_fork.h"

namespace memprof::ruby {
namespace {

[[noreturn]] void run_child(int answer_fd, std::vector<VALUE> changed, const void* app_frames_end,
                            ChildWork work, void* arg) {
  prepare_dump_child(std::move(changed), app_frames_end);
  std::string answer;
  bool sent = false;
  if (work(arg, &answer) && answer.size() <= UINT32_MAX) {
    const auto length = util::encode_frame_length(static_cast<uint32_t>(answer.size()));
    sent = write_fully(answer_fd, {reinterpret_cast<const char*>(length.data()), length.size()}) == 0 &&
           write_fully(answer_fd, answer) == 0;
  }
  ::_exit(sent ? 0 : 1);
}

// waitpid for `pid`, again after a signal; false when the child is not ours to reap (any more).
bool reap(pid_t pid, int* status) noexcept {
  pid_t reaped;
  do {
    reaped = ::waitpid(pid, status, 0);
  } while (reaped < 0 && errno == EINTR);
  return reaped == pid;
}

}  // namespace

Result<ForkedChild> fork_child(const std::vector<VALUE>& changed, const void* app_frames_end, ChildWork work,
                               void* arg) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return err("pipe: {}", std::strerror(errno));
  ScopedFd read_end(fds[0]);
  ScopedFd write_end(fds[1]);
  const pid_t pid = ::fork();
  if (pid < 0) return err("fork: {}", std::strerror(errno));
  if (pid == 0) {
    read_end.reset();
    run_child(write_end.get(), changed, app_frames_end, work, arg);
  }
  return ForkedChild{pid, std::move(read_end)};
}

void prepare_dump_child(std::vector<VALUE> changed, const void* app_frames_end) noexcept {
  // This thread's frames are the dump's own, as in a dump written without a child.
  std::erase(changed, rb_thread_current());
  // The roots are read from this thread's machine stack down to the reading's own frames,
  // whose unwritten slots hold what the parent's earlier deeper calls left there (seen: the
  // 500-element Array of a finished call, kept alive only through machine_context).
  util::clear_stack_below();
  capture_heap_at_fork(changed, app_frames_end);
  rb_thread_atfork();
  // What only the forgotten threads held must stay until the dump reads it.
  rb_gc_disable();
}

std::string wait_for_end(pid_t pid) {
  int status = 0;
  if (!reap(pid, &status)) return "was reaped by someone else (a wait in the app), so how it ended is unknown";
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    return fmt::format("ended by signal {} ({})", signal, strsignal(signal));
  }
  return fmt::format("ended with status {}", WEXITSTATUS(status));
}

}  // namespace memprof::ruby
