// What a hook records of one call on x86-64 Linux (System V ABI): the registers that carry
// arguments at entry and the result at return. Integer and pointer arguments take rdi, rsi,
// rdx, rcx, r8, r9 in order; float and double arguments take xmm0-xmm7 in order, independently
// (the third double is in xmm2 however many integers come before it). Arguments beyond those,
// long double and structs passed in memory are on the stack, which is not recorded.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace memprof::trace {

struct ArgumentRegisters {
  std::array<uint64_t, 6> integer{};  // rdi, rsi, rdx, rcx, r8, r9
  std::array<uint64_t, 8> vector{};   // the low 8 bytes of xmm0-xmm7
};

struct ReturnRegisters {
  uint64_t integer = 0;  // rax
  uint64_t vector = 0;   // the low 8 bytes of xmm0
};

struct CapturedCall {
  ArgumentRegisters arguments;
  std::optional<ReturnRegisters> returned;  // empty while the call has not returned
};

}  // namespace memprof::trace
