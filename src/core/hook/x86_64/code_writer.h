// Emits the few x86-64 instructions trampolines are made of. Each function appends to `out`,
// whose first byte will live at `base`, so rel32 operands are computed for the final address.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/hook/near_memory.h"
#include "core/util/result.h"

namespace memprof::hook::x86_64 {

constexpr size_t kJumpRel32Size = 5;   // e9 rel32
constexpr size_t kJumpAbsoluteSize = 14;  // ff 25 00000000, then the 8-byte address

class CodeWriter {
 public:
  explicit CodeWriter(uintptr_t base) : base_(base) {}

  uintptr_t here() const { return base_ + out_.size(); }
  const std::vector<uint8_t>& code() const { return out_; }
  std::vector<uint8_t> take() { return std::move(out_); }

  void bytes(const uint8_t* data, size_t size) { out_.insert(out_.end(), data, data + size); }
  void u8(uint8_t value) { out_.push_back(value); }
  void u32(uint32_t value) { bytes(reinterpret_cast<const uint8_t*>(&value), 4); }
  void u64(uint64_t value) { bytes(reinterpret_cast<const uint8_t*>(&value), 8); }

  // jmp [rip+0]; .quad target — reaches anywhere.
  void jump_absolute(uintptr_t target) {
    u8(0xff), u8(0x25), u32(0);
    u64(target);
  }
  // jmp rel32 when in reach, else the absolute form.
  void jump(uintptr_t target) {
    if (rel32_reaches(here() + 5, target)) {
      u8(0xe9), u32(rel32(here() + 4, target));
    } else {
      jump_absolute(target);
    }
  }
  // call rel32 when in reach, else call [rip+2]; jmp +8; .quad target.
  void call(uintptr_t target) {
    if (rel32_reaches(here() + 5, target)) {
      u8(0xe8), u32(rel32(here() + 4, target));
    } else {
      u8(0xff), u8(0x15), u32(2);
      u8(0xeb), u8(8);
      u64(target);
    }
  }
  // Pushes a 64-bit value as a call pushes its return address: push imm32 (sign-extended),
  // then mov dword [rsp+4], imm32 for the upper half. No register or flag changes.
  void push_u64(uint64_t value) {
    u8(0x68), u32(static_cast<uint32_t>(value));
    u8(0xc7), u8(0x44), u8(0x24), u8(0x04), u32(static_cast<uint32_t>(value >> 32));
  }
  // jcc rel32 (0f 80+cc) when in reach, else the inverse condition skipping an absolute jump.
  void jump_if(uint8_t condition, uintptr_t target) {
    if (rel32_reaches(here() + 6, target)) {
      u8(0x0f), u8(static_cast<uint8_t>(0x80 | condition)), u32(rel32(here() + 4, target));
    } else {
      u8(static_cast<uint8_t>(0x70 | (condition ^ 1))), u8(kJumpAbsoluteSize);
      jump_absolute(target);
    }
  }

 private:
  // The displacement for a rel32 field written next, in an instruction ending at `end`.
  static uint32_t rel32(uintptr_t end, uintptr_t target) {
    return static_cast<uint32_t>(static_cast<int32_t>(target - end));
  }

  uintptr_t base_;
  std::vector<uint8_t> out_;
};

}  // namespace memprof::hook::x86_64
