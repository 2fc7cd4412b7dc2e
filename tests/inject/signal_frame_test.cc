// The signal frame a hijacked thread returns through: the registers rt_sigreturn resumes with,
// and the bytes the kernel checks before it trusts the frame (the full ucontext and XSAVE
// restore are exercised against a real target in load_library_test.cc).
#include "inject/signal_frame.h"

#include <signal.h>
#include <sys/syscall.h>

#include <cstring>

#include <gtest/gtest.h>

namespace memprof::inject {
namespace {

user_regs_struct stopped_in(long number, long result) {
  user_regs_struct regs{};
  regs.orig_rax = static_cast<uint64_t>(number);
  regs.rax = static_cast<uint64_t>(result);
  regs.rip = 0x7f0000001002;
  return regs;
}

TEST(RegistersToResume, AnInterruptedSystemCallIsMadeAgain) {
  for (long restart : {-512L, -513L, -514L, -516L}) {
    const user_regs_struct regs = registers_to_resume(stopped_in(SYS_read, restart));
    EXPECT_EQ(regs.rax, uint64_t{SYS_read}) << restart;
    EXPECT_EQ(regs.rip, 0x7f0000001000u) << "back on the syscall instruction";
  }
}

TEST(RegistersToResume, AFinishedOrNoSystemCallIsLeftAlone) {
  for (const user_regs_struct& stopped :
       {stopped_in(SYS_read, 5), stopped_in(SYS_read, -4 /* EINTR */), stopped_in(-1, -512)}) {
    const user_regs_struct regs = registers_to_resume(stopped);
    EXPECT_EQ(regs.rax, stopped.rax);
    EXPECT_EQ(regs.rip, stopped.rip);
  }
}

TEST(SignalFrame, CarriesTheStateTheMaskAndBothXsaveMagicWords) {
  const uint64_t rsp = 0x7ffd00010000;
  const std::vector<unsigned char> xsave(832, 0xab);
  const CallFrame frame = plan_call_frame(rsp, 64, xsave.size());
  user_regs_struct regs = stopped_in(SYS_read, -512);
  regs.rsp = rsp;
  regs.rbx = 0x1111;
  regs.r15 = 0x2222;
  regs.eflags = 0x246;
  regs.cs = 0x33;
  regs.ss = 0x2b;
  const XsaveLayout layout{0x7, 832};
  const auto bytes = encode_signal_frame(frame, 0x7f0000005000, regs, xsave, layout, 0x4002);
  ASSERT_EQ(bytes.size(), frame.strings - frame.entry_rsp);

  auto word = [&](uint64_t offset) {
    uint64_t value = 0;
    std::memcpy(&value, bytes.data() + offset, sizeof(value));
    return value;
  };
  EXPECT_EQ(word(0), 0x7f0000005000u) << "the return address (pretcode)";
  EXPECT_EQ(word(8) & 0x7, 0x7u) << "UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS";
  struct sigcontext sc;
  std::memcpy(&sc, bytes.data() + 8 + 40, sizeof(sc));
  EXPECT_EQ(sc.rbx, 0x1111u);
  EXPECT_EQ(sc.r15, 0x2222u);
  EXPECT_EQ(sc.rsp, rsp);
  EXPECT_EQ(sc.rax, uint64_t{SYS_read}) << "the read made again";
  EXPECT_EQ(sc.rip, 0x7f0000001000u);
  EXPECT_EQ(sc.cs, 0x33);
  EXPECT_EQ(sc.__pad0, 0x2b) << "ss";
  EXPECT_EQ(sc.__fpstate_word, frame.xsave);
  EXPECT_EQ(word(kSignalMaskOffset), 0x4002u);
  int ss_flags = 0;
  std::memcpy(&ss_flags, bytes.data() + 8 + 16 + 8, sizeof(ss_flags));
  EXPECT_EQ(ss_flags, 4) << "a mode the kernel refuses: the alternate stack is left alone";

  const size_t xsave_at = frame.xsave - frame.entry_rsp;
  uint32_t sw[5];
  std::memcpy(sw, bytes.data() + xsave_at + 464, sizeof(sw));
  EXPECT_EQ(sw[0], 0x46505853u) << "FP_XSTATE_MAGIC1";
  EXPECT_EQ(sw[1], 832u + 4) << "extended size";
  EXPECT_EQ(sw[2], 0x7u) << "features";
  EXPECT_EQ(sw[4], 832u) << "size";
  uint32_t magic2 = 0;
  std::memcpy(&magic2, bytes.data() + xsave_at + 832, sizeof(magic2));
  EXPECT_EQ(magic2, 0x46505845u) << "FP_XSTATE_MAGIC2 right after the area";
  EXPECT_EQ(bytes[xsave_at], 0xab) << "the area itself";
}

TEST(SignalFrame, ThisCpuRestoresAtLeastX87AndSse) {
  const XsaveLayout layout = this_cpu_xsave_layout(4096);
  EXPECT_EQ(layout.features & 0x3, 0x3u);
  EXPECT_LE(layout.size, 4096u);
}

}  // namespace
}  // namespace memprof::inject
