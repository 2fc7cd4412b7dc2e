#include "attach/launched_command.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "attach/agent_client.h"
#include "attach/installation.h"
#include "attach/program_identity.h"
#include "core/util/scoped_fd.h"

namespace memprof::attach {

std::string prepended_to(const char* variable, const std::string& value, const char* separator) {
  const char* existing = std::getenv(variable);
  if (existing == nullptr || *existing == '\0') return value;
  return value + separator + existing;
}

Result<LaunchedCommand> LaunchedCommand::start(const std::vector<std::string>& command,
                                               const Environment& environment) {
  if (command.empty()) return err("no command given");
  MEMPROF_TRY(agent, agent_library());
  // Everything the child needs is made before fork: after it, only setenv and exec.
  Environment variables = environment;
  variables.emplace_back("LD_PRELOAD", prepended_to("LD_PRELOAD", agent, ":"));
  std::vector<char*> argv;
  for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  // The exec's errno comes back through a pipe that a successful exec closes (O_CLOEXEC).
  int exec_result[2];
  if (::pipe2(exec_result, O_CLOEXEC) != 0) return err("pipe: {}", std::strerror(errno));
  ScopedFd result_read(exec_result[0]), result_write(exec_result[1]);
  pid_t child = ::fork();
  if (child < 0) return err("fork: {}", std::strerror(errno));
  if (child == 0) {
    for (const auto& [name, value] : variables) ::setenv(name.c_str(), value.c_str(), 1);
    ::execvp(argv[0], argv.data());
    const int failure = errno;
    (void)!::write(result_write.get(), &failure, sizeof failure);
    ::_exit(127);
  }
  result_write.reset();
  int failure = 0;
  ssize_t got = 0;
  while ((got = ::read(result_read.get(), &failure, sizeof failure)) < 0 && errno == EINTR) {
  }
  if (got == sizeof failure) {
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
    return err("cannot run {}: {}", command[0], std::strerror(failure));
  }
  return LaunchedCommand(child, std::move(agent));
}

bool LaunchedCommand::running() const {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  return info.si_pid == 0;
}

Status LaunchedCommand::wait_for_agent() const {
  // Until the child has exec'd, its vector is memprof's own (inherited through fork).
  const ProgramIdentity memprof = read_program(::getpid());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!running()) return err("process {} ended before its agent started", pid_);
    if (agent_listening(pid_)) return ok_status();
    if (const ProgramIdentity program = read_program(pid_); program.known() && !program.same_program(memprof)) {
      if (Status preloadable = agent_preloadable(pid_, program, agent_library_); !preloadable.ok())
        return err("process {}: {}", pid_, preloadable.message());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return err("the agent of process {} did not start within 10 s", pid_);
}

int LaunchedCommand::wait() {
  if (!reaped_) {
    while (::waitpid(pid_, &wait_status_, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  if (WIFSIGNALED(wait_status_)) return 128 + WTERMSIG(wait_status_);
  return WIFEXITED(wait_status_) ? WEXITSTATUS(wait_status_) : 1;
}

std::string LaunchedCommand::ending() const {
  if (WIFSIGNALED(wait_status_)) return fmt::format("was killed by SIG{}", sigabbrev_np(WTERMSIG(wait_status_)));
  return fmt::format("exited with status {}", WEXITSTATUS(wait_status_));
}

}  // namespace memprof::attach
