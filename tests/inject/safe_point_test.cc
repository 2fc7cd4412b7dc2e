// The rules for a safe thread and moment, and the call frame's arithmetic, without a target.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "inject/call_frame.h"
#include "inject/safe_point.h"
#include "inject/waiting_syscalls.h"

namespace memprof::inject {
namespace {

user_regs_struct in_syscall(long number, uint64_t second_argument = 0) {
  user_regs_struct regs{};
  regs.orig_rax = static_cast<uint64_t>(number);
  regs.rsi = second_argument;
  return regs;
}

TEST(WaitingSyscalls, WaitsAreWaitingAndWorkIsNot) {
  EXPECT_TRUE(is_waiting_syscall(in_syscall(SYS_read)));
  EXPECT_TRUE(is_waiting_syscall(in_syscall(SYS_epoll_wait)));
  EXPECT_TRUE(is_waiting_syscall(in_syscall(SYS_clock_nanosleep)));
  EXPECT_TRUE(is_waiting_syscall(in_syscall(SYS_futex, FUTEX_WAIT_PRIVATE)));
  EXPECT_TRUE(is_waiting_syscall(in_syscall(SYS_futex, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME)));
  // A lock holder wakes the waiters of the lock it releases; it may hold another.
  EXPECT_FALSE(is_waiting_syscall(in_syscall(SYS_futex, FUTEX_WAKE_PRIVATE)));
  EXPECT_FALSE(is_waiting_syscall(in_syscall(SYS_write)));
  EXPECT_FALSE(is_waiting_syscall(in_syscall(SYS_mmap)));
  EXPECT_FALSE(is_waiting_syscall(in_syscall(-1)));
  EXPECT_EQ(syscall_name(SYS_futex), "futex");
  EXPECT_EQ(syscall_name(SYS_mmap), "mmap");
  EXPECT_EQ(syscall_name(100000), "syscall 100000");
}

class JudgeThread : public ::testing::Test {
 protected:
  JudgeThread() : memory_(::getpid()) {
    libc_.libc = {"/lib/x86_64-linux-gnu/libc.so.6", {{address(code_), address(code_) + 16}}};
    libc_.loader = {"/lib64/ld-linux-x86-64.so.2", {{0x3000, 0x4000}}};
  }
  static uint64_t address(const void* p) { return reinterpret_cast<uint64_t>(p); }
  // rip just after the `syscall` instruction (0f 05) of a fake libc wrapper.
  uint64_t after_syscall() const { return address(code_) + 3; }

  // nop; syscall; ret
  alignas(16) unsigned char code_[16] = {0x90, 0x0f, 0x05, 0xc3};
  TargetLibc libc_;
  proc::RemoteMemory memory_;
};

TEST_F(JudgeThread, BlockedInAWaitingSyscallOfLibcIsSafe) {
  auto regs = in_syscall(SYS_read);
  regs.rip = after_syscall();
  auto verdict = judge_stopped_thread(regs, libc_, memory_);
  EXPECT_TRUE(verdict.safe);
  EXPECT_EQ(verdict.doing.substr(0, 20), "was blocked in read ");
}

TEST_F(JudgeThread, RunningInLibcIsNot) {
  user_regs_struct regs{};
  regs.orig_rax = static_cast<uint64_t>(-1);
  regs.rip = address(code_) + 8;
  EXPECT_FALSE(judge_stopped_thread(regs, libc_, memory_).safe);
  auto waking = in_syscall(SYS_futex, FUTEX_WAKE_PRIVATE);
  waking.rip = after_syscall();
  auto verdict = judge_stopped_thread(waking, libc_, memory_);
  EXPECT_FALSE(verdict.safe);
  EXPECT_EQ(verdict.doing.substr(0, 13), "was in futex ");
  // A waiting syscall number, but rip is not right after a syscall instruction.
  auto odd = in_syscall(SYS_read);
  odd.rip = address(code_) + 8;
  EXPECT_FALSE(judge_stopped_thread(odd, libc_, memory_).safe);
}

TEST_F(JudgeThread, InTheLoaderIsNotEvenBlocked) {
  auto regs = in_syscall(SYS_read);
  regs.rip = 0x3800;
  auto verdict = judge_stopped_thread(regs, libc_, memory_);
  EXPECT_FALSE(verdict.safe);
  EXPECT_EQ(verdict.doing, "was in the dynamic loader (0x3800 in ld-linux-x86-64.so.2)");
}

TEST_F(JudgeThread, AnywhereElseIsSafe) {
  user_regs_struct regs{};
  regs.orig_rax = static_cast<uint64_t>(-1);
  regs.rip = 0x555555554000;
  auto verdict = judge_stopped_thread(regs, libc_, memory_);
  EXPECT_TRUE(verdict.safe);
  EXPECT_EQ(verdict.doing, "was running 0x555555554000");
}

TEST(CallFrame, BelowTheRedZoneAlignedAsAfterACall) {
  for (uint64_t rsp : {0x7ffc0000ull, 0x7ffc0008ull, 0x7ffc0003ull}) {
    for (uint64_t strings : {0ull, 1ull, 15ull, 16ull, 17ull, 4096ull}) {
      for (uint64_t xsave : {512ull + 64, 832ull, 2696ull}) {
        CallFrame frame = plan_call_frame(rsp, strings, xsave);
        EXPECT_EQ(frame.entry_rsp % 16, 8u) << "rsp % 16 == 8 at the callee's entry";
        EXPECT_EQ(frame.saved_end, rsp - kRedZone) << "the red zone is left alone";
        EXPECT_LE(frame.strings + strings, rsp - kRedZone);
        EXPECT_EQ(frame.strings % 16, 0u);
        EXPECT_EQ(frame.xsave % 64, 0u) << "XRSTOR wants 64-byte alignment";
        EXPECT_LE(frame.xsave + xsave + kXsaveMagic2Size, frame.strings);
        EXPECT_LE(frame.entry_rsp + kSignalFrameSize, frame.xsave) << "rt_sigframe below it";
        EXPECT_GT(frame.entry_rsp + kSignalFrameSize + 16 + 64, frame.xsave) << "no more room than alignment needs";
        EXPECT_EQ(frame.saved_begin, frame.entry_rsp);
        EXPECT_EQ(frame.result_slot(), frame.entry_rsp + 8 + 304) << "the siginfo";
      }
    }
  }
}

}  // namespace
}  // namespace memprof::inject
