// The kernel signal frame that lets a borrowed thread put itself back without memprof.
//
// Every call the injector makes returns through rt_sigreturn (see hijacked_thread.h) with a
// struct rt_sigframe below the thread's red zone that describes the thread exactly as it was
// stopped: general registers, flags, the XSAVE area (x87, SSE, AVX, ... with the magic words
// the kernel checks before it trusts the area) and the signal mask. If memprof dies while the
// thread runs a call (SIGKILL, the OOM killer), the call returns, rt_sigreturn restores the
// thread by itself, and the process goes on where it was.
#pragma once

#include <sys/user.h>

#include <cstdint>
#include <span>
#include <vector>

#include "inject/call_frame.h"

namespace memprof::inject {

// The registers to resume a thread stopped with `stopped` without a tracer's help. A thread
// stopped inside an interrupted system call (rax = -ERESTARTSYS and the like, orig_rax = its
// number) is put back at its `syscall` instruction with rax = the number, so that it makes the
// call again with the same arguments, as the kernel does when no handler runs. (rt_sigreturn
// cannot continue a call the kernel meant to finish through restart_syscall, -ERESTART_RESTARTBLOCK:
// a relative nanosleep, poll or futex wait is made again in full.)
user_regs_struct registers_to_resume(const user_regs_struct& stopped);

// What rt_sigreturn is told about the XSAVE area (the software bytes of its FXSAVE part, which
// NT_X86_XSTATE leaves empty): the state components to restore and the area's size.
struct XsaveLayout {
  uint64_t features = 0;  // XCR0's user components
  uint32_t size = 0;      // bytes, standard (non-compacted) format
};
// This CPU's, for an area of `area_size` bytes as NT_X86_XSTATE gives it: XCR0 (xgetbv), less
// AMX's tile components, which a process has only on request (and whose area the kernel would
// then refuse at this size).
XsaveLayout this_cpu_xsave_layout(size_t area_size);

// The bytes of [frame.entry_rsp, frame.strings): the return address `return_to`, the
// ucontext describing `regs` (as registers_to_resume gives them), the signal mask `blocked`
// (bit N-1 for signal N) and the XSAVE area `xsave` (as PTRACE_GETREGSET NT_X86_XSTATE gives
// it) at frame.xsave, marked with `layout` and the magic words the kernel checks.
std::vector<unsigned char> encode_signal_frame(const CallFrame& frame, uint64_t return_to,
                                               const user_regs_struct& regs,
                                               std::span<const unsigned char> xsave,
                                               const XsaveLayout& layout, uint64_t blocked);

// Offset of the signal mask in the frame, to update it alone.
constexpr uint64_t kSignalMaskOffset = 8 + 296;

}  // namespace memprof::inject
