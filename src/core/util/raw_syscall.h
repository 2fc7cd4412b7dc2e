// A system call without libc, for code that runs where any libc function may be one being
// hooked or traced: before a thread's tracer state exists, or in a forked child before its
// inherited int3s are put back (a libc call there could reach one with SIGTRAP blocked, and the
// kernel kills the process). The kernel's result: a negative errno on failure; errno is not
// touched.
#pragma once

namespace memprof {

inline long raw_syscall(long number, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0, long a5 = 0,
                        long a6 = 0) {
  long result;
  register long r10 asm("r10") = a4;
  register long r8 asm("r8") = a5;
  register long r9 asm("r9") = a6;
  asm volatile("syscall"
               : "=a"(result)
               : "a"(number), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
               : "rcx", "r11", "memory");
  return result;
}

}  // namespace memprof
