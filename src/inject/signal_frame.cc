#include "inject/signal_frame.h"

#include <cpuid.h>
#include <signal.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace memprof::inject {

namespace {

// The kernel's struct ucontext on x86-64 (asm-generic/ucontext.h), not glibc's ucontext_t
// (which has a 128-byte signal set and more after it). sigcontext and stack_t are the same in
// glibc and the kernel.
struct KernelUcontext {
  uint64_t flags;
  uint64_t link;
  stack_t stack;
  struct sigcontext mcontext;
  uint64_t sigmask;  // the kernel's sigset_t: 64 signals
};
static_assert(offsetof(KernelUcontext, mcontext) == 40);
static_assert(sizeof(KernelUcontext) == 304);
static_assert(8 + offsetof(KernelUcontext, sigmask) == kSignalMaskOffset);
static_assert(8 + sizeof(KernelUcontext) == kSiginfoOffset);

// arch/x86/include/uapi/asm/ucontext.h: the frame has an XSAVE area with both magic words, its
// ss is valid, and rt_sigreturn restores it as it is.
constexpr uint64_t kUcFpXstate = 0x1;
constexpr uint64_t kUcSigcontextSs = 0x2;
constexpr uint64_t kUcStrictRestoreSs = 0x4;

// The software-reserved bytes of the FXSAVE area (struct _fpx_sw_bytes), where the kernel
// writes its XSAVE layout in both signal frames and NT_X86_XSTATE.
constexpr size_t kSwBytesOffset = 464;
constexpr uint32_t kXstateMagic1 = 0x46505853;
constexpr uint32_t kXstateMagic2 = 0x46505845;

// An ss_flags mode the kernel refuses (EINVAL) before changing anything: rt_sigreturn ignores
// that error, so the thread's alternate signal stack, which memprof cannot read, stays as it is.
constexpr int kLeaveAltStackAlone = 4;

constexpr int64_t kErestartsys = -512;
constexpr int64_t kErestartnointr = -513;
constexpr int64_t kErestartnohand = -514;
constexpr int64_t kErestartRestartblock = -516;
constexpr uint64_t kSyscallInstructionSize = 2;

}  // namespace

user_regs_struct registers_to_resume(const user_regs_struct& stopped) {
  user_regs_struct regs = stopped;
  if (static_cast<int64_t>(regs.orig_rax) < 0) return regs;
  switch (static_cast<int64_t>(regs.rax)) {
    case kErestartsys:
    case kErestartnointr:
    case kErestartnohand:
    case kErestartRestartblock:
      regs.rax = regs.orig_rax;
      regs.rip -= kSyscallInstructionSize;
      break;
    default:
      break;
  }
  return regs;
}

XsaveLayout this_cpu_xsave_layout(size_t area_size) {
  uint32_t low = 0;
  uint32_t high = 0;
  asm volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  XsaveLayout layout{(uint64_t{high} << 32) | low, static_cast<uint32_t>(area_size)};
  constexpr uint64_t kTileConfig = uint64_t{1} << 17;
  constexpr uint64_t kTileData = uint64_t{1} << 18;
  if ((layout.features & kTileData) != 0) {
    unsigned eax = 0;
    unsigned offset = 0;
    unsigned ecx = 0;
    unsigned edx = 0;
    __cpuid_count(0xd, 17, eax, offset, ecx, edx);  // where the tile configuration starts
    layout.features &= ~(kTileConfig | kTileData);
    layout.size = std::min(layout.size, offset);
  }
  return layout;
}

std::vector<unsigned char> encode_signal_frame(const CallFrame& frame, uint64_t return_to,
                                               const user_regs_struct& stopped,
                                               std::span<const unsigned char> xsave,
                                               const XsaveLayout& layout, uint64_t blocked) {
  const user_regs_struct regs = registers_to_resume(stopped);
  KernelUcontext uc{};
  uc.flags = kUcSigcontextSs | kUcStrictRestoreSs;
  uc.stack.ss_flags = kLeaveAltStackAlone;
  struct sigcontext& sc = uc.mcontext;
  sc.r8 = regs.r8;
  sc.r9 = regs.r9;
  sc.r10 = regs.r10;
  sc.r11 = regs.r11;
  sc.r12 = regs.r12;
  sc.r13 = regs.r13;
  sc.r14 = regs.r14;
  sc.r15 = regs.r15;
  sc.rdi = regs.rdi;
  sc.rsi = regs.rsi;
  sc.rbp = regs.rbp;
  sc.rbx = regs.rbx;
  sc.rdx = regs.rdx;
  sc.rax = regs.rax;
  sc.rcx = regs.rcx;
  sc.rsp = regs.rsp;
  sc.rip = regs.rip;
  sc.eflags = regs.eflags;
  sc.cs = static_cast<unsigned short>(regs.cs);
  sc.__pad0 = static_cast<unsigned short>(regs.ss);  // glibc's name for ss
  sc.__fpstate_word = frame.xsave;
  uc.sigmask = blocked;

  std::vector<unsigned char> bytes(frame.strings - frame.entry_rsp, 0);
  std::memcpy(bytes.data(), &return_to, sizeof(return_to));
  const size_t xsave_at = frame.xsave - frame.entry_rsp;
  const size_t room = bytes.size() - xsave_at;
  std::memcpy(bytes.data() + xsave_at, xsave.data(), std::min(xsave.size(), room));
  // The kernel trusts the area as XSAVE only with the software bytes (struct _fpx_sw_bytes)
  // and a second magic word right after the size they state; without them it restores the
  // legacy 512 bytes and resets AVX and beyond.
  if (layout.features != 0 && xsave.size() >= kSwBytesOffset + 24 &&
      layout.size + kXsaveMagic2Size <= room) {
    unsigned char* sw = bytes.data() + xsave_at + kSwBytesOffset;
    const uint32_t extended_size = layout.size + kXsaveMagic2Size;
    std::memcpy(sw, &kXstateMagic1, 4);
    std::memcpy(sw + 4, &extended_size, 4);
    std::memcpy(sw + 8, &layout.features, 8);
    std::memcpy(sw + 16, &layout.size, 4);
    std::memcpy(bytes.data() + xsave_at + layout.size, &kXstateMagic2, sizeof(kXstateMagic2));
    uc.flags |= kUcFpXstate;
  }
  std::memcpy(bytes.data() + sizeof(return_to), &uc, sizeof(uc));
  return bytes;
}

}  // namespace memprof::inject
