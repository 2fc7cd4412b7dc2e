// load_library against a real target whose main thread computes, sleeps, blocks in read(2), or
// allocates alongside 8 other allocating threads: the library is loaded, and the thread carries
// on exactly where it was.
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "inject/call_frame.h"
#include "inject/inject.h"
#include "inject/target.h"

namespace memprof::inject {
namespace {

using testing::InjectTarget;
using Clock = std::chrono::steady_clock;

// The offset of the first byte that differs, -1 when none does (and the sizes match).
long first_difference(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) {
  auto [at_a, at_b] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  if (at_a == a.end() && at_b == b.end()) return -1;
  return at_a - a.begin();
}

TEST(LoadLibrary, ComputingThreadKeepsEveryRegister) {
  InjectTarget target("spin");
  auto loaded = load_library(target.pid(), INJECT_COUNTER_LIB);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_NE(loaded->handle, 0u);
  EXPECT_EQ(loaded->thread, target.pid()) << "the leader, computing in the program, is safe";
  // The loop compares 15 general and 15 vector registers on every iteration.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::kill(target.pid(), SIGUSR1);
  std::string verdict = target.line();
  EXPECT_TRUE(verdict.starts_with("registers intact ")) << verdict;
  EXPECT_EQ(target.injections_reported(), 1);
}

TEST(LoadLibrary, NanosleepIsRestartedNotCutShort) {
  InjectTarget target("sleep");
  ASSERT_TRUE(testing::wait_for_syscall(target.pid(), target.pid(), SYS_clock_nanosleep) ||
              testing::wait_for_syscall(target.pid(), target.pid(), SYS_nanosleep));
  auto loaded = load_library(target.pid(), INJECT_COUNTER_LIB);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  int rc = -1, error = -1;
  double elapsed_ms = 0;
  std::string slept = target.line();
  ASSERT_EQ(std::sscanf(slept.c_str(), "slept %d %d %lf", &rc, &error, &elapsed_ms), 3) << slept;
  EXPECT_EQ(rc, 0) << "nanosleep was interrupted (errno " << error << ") instead of restarted";
  EXPECT_GE(elapsed_ms, 1500);
  EXPECT_LT(elapsed_ms, 3000);
  EXPECT_EQ(target.injections_reported(), 1);
}

TEST(LoadLibrary, BlockedReadRestartsAndThreadIsPutBackExactly) {
  InjectTarget target("read");
  ASSERT_TRUE(testing::wait_for_syscall(target.pid(), target.pid(), SYS_read));
  const std::string library = INJECT_COUNTER_LIB;
  // The bytes the call frame covers, from the red zone down to the return address slot.
  auto before = testing::snapshot_blocked_thread(target.pid(), 0);
  const CallFrame frame = plan_call_frame(before.regs.rsp, library.size() + 2, before.xsave.size());
  const size_t frame_bytes = before.regs.rsp - frame.saved_begin;
  before = testing::snapshot_blocked_thread(target.pid(), frame_bytes + 64);

  auto loaded = load_library(target.pid(), library);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  ASSERT_TRUE(testing::wait_for_syscall(target.pid(), target.pid(), SYS_read));
  auto after = testing::snapshot_blocked_thread(target.pid(), frame_bytes + 64);

  EXPECT_EQ(std::memcmp(&before.regs, &after.regs, sizeof(before.regs)), 0)
      << "rip " << std::hex << before.regs.rip << " -> " << after.regs.rip << ", rax "
      << before.regs.rax << " -> " << after.regs.rax << ", orig_rax " << before.regs.orig_rax
      << " -> " << after.regs.orig_rax << ", rsp " << before.regs.rsp << " -> " << after.regs.rsp;
  EXPECT_EQ(static_cast<int64_t>(before.regs.rax), -512) << "stopped inside read: -ERESTARTSYS";
  EXPECT_EQ(std::memcmp(&before.fpregs, &after.fpregs, sizeof(before.fpregs)), 0);
  EXPECT_EQ(first_difference(before.xsave, after.xsave), -1) << "XSAVE area byte (512: XSTATE_BV)";
  // Only the 64 bytes below the frame (dead stack, dlopen's own frames) may differ.
  EXPECT_TRUE(std::equal(before.stack.begin() + 64, before.stack.end(), after.stack.begin() + 64))
      << "stack bytes in [" << std::hex << frame.saved_begin << ", " << before.regs.rsp
      << ") changed";

  const std::string message = "exactly these bytes";
  ASSERT_TRUE(target.child().write_stdin(message));
  EXPECT_EQ(target.line(), fmt::format("read {} {}", message.size(), message));
  EXPECT_EQ(target.injections_reported(), 1);
}

// Copies of the library: the loader keys objects by file, so each copy runs its constructor.
std::vector<std::string> library_copies(const std::filesystem::path& directory, int count) {
  std::filesystem::create_directories(directory);
  std::vector<std::string> copies;
  for (int i = 0; i < count; ++i) {
    auto copy = directory / fmt::format("counter{}.so", i);
    std::filesystem::copy_file(INJECT_COUNTER_LIB, copy,
                               std::filesystem::copy_options::overwrite_existing);
    copies.push_back(copy.string());
  }
  return copies;
}

TEST(LoadLibrary, ManyInjectionsWhileNineThreadsAllocate) {
  const auto directory = std::filesystem::temp_directory_path() /
                         fmt::format("memprof-inject-test-{}", ::getpid());
  const auto copies = library_copies(directory, 200);
  InjectTarget target("malloc");
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  int injected = 0;
  std::chrono::microseconds longest{0};
  int on_leader = 0;
  for (const auto& copy : copies) {
    if (Clock::now() >= deadline) break;
    auto loaded = load_library(target.pid(), copy);
    ASSERT_TRUE(loaded.ok()) << "injection " << injected << ": " << loaded.message();
    ++injected;
    longest = std::max(longest, loaded->pause);
    on_leader += loaded->thread == target.pid();
  }
  std::filesystem::remove_all(directory);
  // The machine may be busy (two cores, shared): the point is that none deadlocks.
  EXPECT_GE(injected, 10) << "too slow to be useful";
  EXPECT_EQ(target.injections_reported(), injected) << "every constructor ran once";
  RecordProperty("injections", injected);
  RecordProperty("longest_pause_us", static_cast<int>(longest.count()));
  std::printf("%d injections, %d on the main thread, longest pause %lld us\n", injected,
              on_leader, static_cast<long long>(longest.count()));
}

TEST(LoadLibrary, MissingFileReportsDlerrorText) {
  InjectTarget target("read");
  auto loaded = load_library(target.pid(), "/nonexistent/libnothing.so");
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.message().find("cannot open shared object file: No such file or directory"),
            std::string::npos) << loaded.message();
  EXPECT_NE(loaded.message().find(std::to_string(target.pid())), std::string::npos);
  // And the target is unharmed: its read still gets its bytes.
  ASSERT_TRUE(target.child().write_stdin("x"));
  EXPECT_EQ(target.line(), "read 1 x");
}

// A container's seccomp profile can refuse what dlopen needs: the error says so, and the process
// runs on untouched.
TEST(LoadLibrary, SeccompFilterRefusingOpenatIsNamed) {
  InjectTarget target("seccomp");
  auto loaded = load_library(target.pid(), INJECT_COUNTER_LIB);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.message().find("Operation not permitted"), std::string::npos)
      << loaded.message();
  EXPECT_NE(loaded.message().find(fmt::format("(process {} runs under a seccomp filter, Seccomp: "
                                              "2 in /proc/{}/status",
                                              target.pid(), target.pid())),
            std::string::npos)
      << loaded.message();
  ASSERT_TRUE(target.child().write_stdin("x"));
  EXPECT_EQ(target.line(), "read 1 x");
  EXPECT_EQ(target.injections_reported(), 0);
}

// Where no executable page can be had (SELinux's execmem, a seccomp filter), the calls return
// to address 0 instead of the stub, whose SIGSEGV memprof catches: the library is still
// loaded and the thread's read made again, whole.
TEST(LoadLibrary, WithoutAnExecutablePageCallsReturnToZeroAndTheThreadIsPutBack) {
  InjectTarget target("noexecmem");
  ASSERT_TRUE(testing::wait_for_syscall(target.pid(), target.pid(), SYS_read));
  auto loaded = load_library(target.pid(), INJECT_COUNTER_LIB);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_NE(loaded->handle, 0u);
  ASSERT_TRUE(target.child().write_stdin("x"));
  EXPECT_EQ(target.line(), "read 1 x");  // alive: the SIGSEGV of each return to 0 never reached it
  EXPECT_EQ(target.injections_reported(), 1);
}

TEST(LoadLibrary, TargetExitingMidwayIsAnErrorNotAHang) {
  InjectTarget target("read");
  // A library whose constructor exits the process.
  auto loaded = load_library(target.pid(), INJECT_EXIT_LIB);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.message().find("exited with status 7"), std::string::npos) << loaded.message();
}

}  // namespace
}  // namespace memprof::inject

namespace memprof::inject {
namespace {

TEST(LoadLibrary, SignalsArrivingDuringTheCallAreDeliveredAfterIt) {
  InjectTarget target("read");
  ASSERT_TRUE(testing::wait_for_syscall(target.pid(), target.pid(), SYS_read));
  std::thread sender([&] {
    // Once the constructor sleeps inside dlopen, one plain signal and one queued one.
    if (!testing::wait_for_syscall(target.pid(), target.pid(), SYS_clock_nanosleep) &&
        !testing::wait_for_syscall(target.pid(), target.pid(), SYS_nanosleep)) {
      return;
    }
    ::kill(target.pid(), SIGUSR1);
    ::sigqueue(target.pid(), SIGUSR2, sigval{42});
  });
  auto loaded = load_library(target.pid(), INJECT_SLOW_LIB);
  sender.join();
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_GE(loaded->pause, std::chrono::milliseconds(300));
  // The handlers ran on the restored thread and read was restarted (SA_RESTART).
  ASSERT_TRUE(target.child().write_stdin("after"));
  EXPECT_EQ(target.line(), "read 5 after");
  EXPECT_EQ(target.injections_reported(), 1);
  EXPECT_EQ(target.signals_reported(), 2);
}

}  // namespace
}  // namespace memprof::inject

namespace memprof::inject {
namespace {

// The injector in a child process of the test, SIGKILLed while the target's thread runs the slow
// library's constructor (300 ms of nanosleep inside dlopen): the kernel detaches the thread, the
// call returns through memprof's rt_sigreturn frame, and the thread goes on exactly where it was.
void kill_injector_during_dlopen(InjectTarget& target) {
  const pid_t injector = ::fork();
  ASSERT_GE(injector, 0);
  if (injector == 0) {
    auto loaded = load_library(target.pid(), INJECT_SLOW_LIB);
    ::_exit(loaded.ok() ? 0 : 1);
  }
  const bool sleeping = testing::wait_for_syscall(target.pid(), target.pid(), SYS_clock_nanosleep) ||
                        testing::wait_for_syscall(target.pid(), target.pid(), SYS_nanosleep);
  ::kill(injector, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(injector, &status, 0), injector);
  ASSERT_TRUE(sleeping) << "the constructor's nanosleep was not seen";
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the injector finished before it was killed (status " << status << ")";
}

TEST(LoadLibrary, AComputingThreadSurvivesTheInjectorsSigkillWithEveryRegister) {
  InjectTarget target("spin");
  kill_injector_during_dlopen(target);
  // The constructor ends, dlopen returns, rt_sigreturn puts the loop back; it compares 15 general
  // and 15 vector registers on every iteration.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(target.pid(), SIGUSR1);
  std::string verdict = target.line();
  EXPECT_TRUE(verdict.starts_with("registers intact ")) << verdict;
  EXPECT_EQ(target.injections_reported(), 1);
}

// The return path's signal (SIGURG, else SIGWINCH) is one the process does not handle; when it
// handles both, the return is caught at the stub's rt_sigreturn instead.
class ABlockedRead : public ::testing::TestWithParam<const char*> {};

TEST_P(ABlockedRead, SurvivesTheInjectorsSigkillAndIsMadeAgain) {
  InjectTarget target(GetParam());
  ASSERT_TRUE(testing::wait_for_syscall(target.pid(), target.pid(), SYS_read));
  const auto before = testing::snapshot_blocked_thread(target.pid(), 0);
  const uint64_t mask_before = testing::blocked_signals(target.pid());
  kill_injector_during_dlopen(target);
  ASSERT_TRUE(testing::wait_for_syscall(target.pid(), target.pid(), SYS_read))
      << "state " << testing::process_state(target.pid());
  const auto after = testing::snapshot_blocked_thread(target.pid(), 0);
  EXPECT_EQ(testing::blocked_signals(target.pid()), mask_before);
  EXPECT_EQ(after.regs.rip, before.regs.rip) << "back in the same read";
  EXPECT_EQ(after.regs.rsp, before.regs.rsp);
  EXPECT_EQ(after.regs.rbx, before.regs.rbx);
  EXPECT_EQ(after.regs.rbp, before.regs.rbp);
  EXPECT_EQ(after.regs.r12, before.regs.r12);
  EXPECT_EQ(after.regs.r15, before.regs.r15);
  EXPECT_EQ(std::memcmp(&before.fpregs, &after.fpregs, sizeof(before.fpregs)), 0);
  EXPECT_EQ(first_difference(before.xsave, after.xsave), -1) << "XSAVE area byte (512: XSTATE_BV)";
  ASSERT_TRUE(target.child().write_stdin("after"));
  EXPECT_EQ(target.line(), "read 5 after");
  EXPECT_EQ(target.injections_reported(), 1);
}

std::string target_mode_name(const ::testing::TestParamInfo<const char*>& info) {
  const std::string mode = info.param;
  if (mode == "read+handlers") return "HandlingSigurgAndSigwinch";
  if (mode == "read+blocked") return "BlockingSigurgAndSigwinch";
  return "Plain";
}

INSTANTIATE_TEST_SUITE_P(LoadLibrary, ABlockedRead,
                         ::testing::Values("read", "read+handlers", "read+blocked"),
                         target_mode_name);

TEST(LoadLibrary, AThreadBlockingSigurgAndSigwinchKeepsItsMask) {
  InjectTarget target("read+blocked");
  ASSERT_TRUE(testing::wait_for_syscall(target.pid(), target.pid(), SYS_read));
  const uint64_t mask_before = testing::blocked_signals(target.pid());
  EXPECT_EQ(mask_before & (1u << (SIGURG - 1)), 1u << (SIGURG - 1));
  auto loaded = load_library(target.pid(), INJECT_COUNTER_LIB);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  ASSERT_TRUE(testing::wait_for_syscall(target.pid(), target.pid(), SYS_read));
  EXPECT_EQ(testing::blocked_signals(target.pid()), mask_before);
  ASSERT_TRUE(target.child().write_stdin("after"));
  EXPECT_EQ(target.line(), "read 5 after");
  EXPECT_EQ(target.injections_reported(), 1);
}

TEST(LoadLibrary, AProcessHandlingSigurgAndSigwinchGetsTheLibraryAndItsReadBack) {
  InjectTarget target("read+handlers");
  ASSERT_TRUE(testing::wait_for_syscall(target.pid(), target.pid(), SYS_read));
  auto loaded = load_library(target.pid(), INJECT_COUNTER_LIB);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  ASSERT_TRUE(target.child().write_stdin("after"));
  EXPECT_EQ(target.line(), "read 5 after");
  EXPECT_EQ(target.injections_reported(), 1);
  EXPECT_EQ(target.signals_reported(), 0) << "no SIGURG or SIGWINCH reached the process";
}

}  // namespace
}  // namespace memprof::inject
