// check_can_inject (and load_library, which runs it first): each refusal quickly, in one sentence
// naming the process and what to do.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include <gtest/gtest.h>

#include "core/proc/process_access.h"
#include "inject/inject.h"
#include "inject/ptrace_session.h"
#include "inject/target.h"

namespace memprof::inject {
namespace {

using testing::InjectTarget;
using Clock = std::chrono::steady_clock;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CheckCanInject, AcceptsAnOrdinaryProcess) {
  InjectTarget target("idle");
  auto status = check_can_inject(target.pid());
  EXPECT_TRUE(status.ok()) << status.message();
}

TEST(CheckCanInject, NoSuchProcess) {
  testing::ChildProcess gone({"true"});
  pid_t pid = gone.pid();
  gone.kill_and_wait();
  auto status = check_can_inject(pid);
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(contains(status.message(), fmt::format("no such process: {}", pid)))
      << status.message();
  EXPECT_FALSE(load_library(pid, INJECT_COUNTER_LIB).ok());
}

TEST(CheckCanInject, Zombie) {
  testing::ChildProcess child({"true"});  // exits at once and stays unreaped until the end
  ASSERT_TRUE(testing::wait_for_state(child.pid(), 'Z'));
  auto status = check_can_inject(child.pid());
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(contains(status.message(), fmt::format("process {} is a zombie", child.pid())))
      << status.message();
}

TEST(CheckCanInject, StoppedProcessIsRefusedAtOnce) {
  InjectTarget target("idle");
  ASSERT_EQ(::kill(target.pid(), SIGSTOP), 0);
  ASSERT_TRUE(testing::wait_for_state(target.pid(), 'T'));
  auto start = Clock::now();
  auto loaded = load_library(target.pid(), INJECT_COUNTER_LIB);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.message(), fmt::format("process {} is stopped (SIGSTOP); resume it with "
                                          "kill -CONT {}", target.pid(), target.pid()));
}

// A process (not this one: a forked child) that traces the target until killed.
class OtherTracer {
 public:
  explicit OtherTracer(pid_t target, const char* name = nullptr) {
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      if (name != nullptr) ::prctl(PR_SET_NAME, name);
      char ok = ::ptrace(PTRACE_SEIZE, target, nullptr, nullptr) == 0 ? 'y' : 'n';
      (void)::write(ready[1], &ok, 1);
      ::pause();
      ::_exit(0);
    }
    char ok = 0;
    EXPECT_EQ(::read(ready[0], &ok, 1), 1);
    EXPECT_EQ(ok, 'y');
    ::close(ready[0]);
    ::close(ready[1]);
  }
  ~OtherTracer() {
    ::kill(pid_, SIGKILL);  // the kernel detaches its tracee
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

TEST(CheckCanInject, AlreadyTracedNamesTheTracer) {
  InjectTarget target("idle");
  OtherTracer tracer(target.pid());
  auto start = Clock::now();
  auto loaded = load_library(target.pid(), INJECT_COUNTER_LIB);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.message(),
            fmt::format("process {} is already traced by inject_test (pid {}); detach it or stop "
                        "that tracer first", target.pid(), tracer.pid()));
}

// Two memprof commands at once: the second is told to wait, not to detach anything.
TEST(CheckCanInject, TracedByAnotherMemprofSaysToWait) {
  InjectTarget target("idle");
  OtherTracer tracer(target.pid(), "memprof");
  auto status = check_can_inject(target.pid());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), fmt::format("process {} is being traced by another memprof (pid {}), "
                                          "attaching to it or tracing it; run this again when that "
                                          "command is done", target.pid(), tracer.pid()));
}

// Two attaches at once: the other memprof seized the process after this one's checks passed,
// and the refused PTRACE_SEIZE was explained as a permission problem ("although memprof has
// CAP_SYS_PTRACE (a security module ... may forbid it)").
TEST(CheckCanInject, ASeizeLostToAnotherMemprofSaysToWait) {
  InjectTarget target("idle");
  OtherTracer tracer(target.pid(), "memprof");
  PtraceSession session(target.pid());
  Status seized = session.seize(target.pid());
  ASSERT_FALSE(seized.ok());
  EXPECT_EQ(seized.message(), fmt::format("process {} is being traced by another memprof (pid {}), "
                                          "attaching to it or tracing it; run this again when that "
                                          "command is done", target.pid(), tracer.pid()));
}

// Strict mode kills a process on any other system call: refused before any ptrace.
TEST(CheckCanInject, SeccompStrictModeIsRefused) {
  InjectTarget target("strict");
  auto status = check_can_inject(target.pid());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            fmt::format("process {} runs in seccomp strict mode (Seccomp: 1 in /proc/{}/status): "
                        "any system call but read, write and exit kills it, and loading a library "
                        "needs openat and mmap; memprof cannot attach to it",
                        target.pid(), target.pid()));
  EXPECT_FALSE(load_library(target.pid(), INJECT_COUNTER_LIB).ok());
  char state = testing::process_state(target.pid());
  EXPECT_TRUE(state == 'S' || state == 'R') << "state " << state;
}

TEST(CheckCanInject, StaticallyLinkedHasNoDlopen) {
  InjectTarget target("idle", INJECT_TARGET_STATIC);
  auto status = check_can_inject(target.pid());
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(contains(status.message(), fmt::format("process {} has no libc.so loaded (it is "
                                                     "statically linked)", target.pid())))
      << status.message();
}

TEST(CheckCanInject, ThreadIdIsNotAProcessId) {
  InjectTarget target("malloc");
  pid_t thread = 0;
  for (int i = 0; i < 100 && thread == 0; ++i) {
    // Any thread but the leader.
    for (const auto& entry : std::filesystem::directory_iterator(
             fmt::format("/proc/{}/task", target.pid()))) {
      pid_t tid = std::stoi(entry.path().filename());
      if (tid != target.pid()) thread = tid;
    }
  }
  ASSERT_NE(thread, 0);
  auto status = check_can_inject(thread);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), fmt::format("{} is a thread of process {}; give the process id {} "
                                          "instead", thread, target.pid(), target.pid()));
}

// A kernel thread (kthreadd, kworker/...) is named as one: `trace -p 2` said "cannot resolve
// /proc/2/exe". Skipped in a pid namespace, where no kernel thread is visible.
TEST(KernelThread, IsToldFromAProcess) {
  EXPECT_FALSE(proc::kernel_thread(::getpid()));
  pid_t kthread = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code error;
    (void)std::filesystem::read_symlink(entry.path() / "exe", error);
    // Only a kernel thread (or a process ended meanwhile) has no executable to us, as root.
    if (error == std::errc::no_such_file_or_directory && !proc::process_gone(std::stoi(name))) {
      kthread = std::stoi(name);
      break;
    }
  }
  if (kthread == 0) GTEST_SKIP() << "no kernel thread visible";
  EXPECT_TRUE(proc::kernel_thread(kthread)) << kthread;
  // Every -p command words it so (stats said "not running Ruby: ... trace work on any process").
  EXPECT_EQ(proc::check_process_exists(kthread).message(),
            fmt::format("process {} is a kernel thread: it runs no program", kthread));
}

// The permission rules, with the facts made up (the tests run as root without Yama).
proc::AccessFacts facts(uid_t target_uid, bool cap, std::optional<int> scope, bool ancestor) {
  return proc::AccessFacts{1234, target_uid, 1000, cap, scope, ancestor};
}

TEST(PredictAccess, SameUserWithoutYamaIsAllowed) {
  EXPECT_TRUE(proc::predict_access(facts(1000, false, std::nullopt, false)).ok());
  EXPECT_TRUE(proc::predict_access(facts(1000, false, 0, false)).ok());
}

TEST(PredictAccess, OtherUserNeedsCapSysPtrace) {
  auto refused = proc::predict_access(facts(33, false, 0, false));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(), "permission denied: process 1234 belongs to uid 33 and memprof "
                               "runs as uid 1000 without CAP_SYS_PTRACE; run memprof as that "
                               "user or as root");
  EXPECT_TRUE(proc::predict_access(facts(33, true, 0, false)).ok());
}

TEST(PredictAccess, YamaScopes) {
  auto scope1 = proc::predict_access(facts(1000, false, 1, false));
  ASSERT_FALSE(scope1.ok());
  EXPECT_TRUE(contains(scope1.message(), "ptrace_scope is 1, so only an ancestor"));
  EXPECT_TRUE(contains(scope1.message(), "sysctl kernel.yama.ptrace_scope=0"));
  EXPECT_TRUE(proc::predict_access(facts(1000, false, 1, true)).ok()) << "a parent may";
  EXPECT_TRUE(proc::predict_access(facts(1000, true, 1, false)).ok());

  auto scope2 = proc::predict_access(facts(1000, false, 2, true));
  ASSERT_FALSE(scope2.ok());
  EXPECT_TRUE(contains(scope2.message(), "ptrace_scope is 2, so only processes with "
                                         "CAP_SYS_PTRACE may attach; run memprof as root"));
  EXPECT_TRUE(proc::predict_access(facts(1000, true, 2, false)).ok());

  auto scope3 = proc::predict_access(facts(0, true, 3, true));
  ASSERT_FALSE(scope3.ok());
  EXPECT_TRUE(contains(scope3.message(), "forbids ptrace for everyone until reboot"));
}

}  // namespace
}  // namespace memprof::inject
