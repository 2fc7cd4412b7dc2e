// x86-64 instruction decoding for the hook engine, on Zydis: just the facts hooks need (length,
// control flow, relative operands and where their bytes are).
#pragma once

#include <Zydis/Zydis.h>

#include <cstddef>
#include <cstdint>

#include "core/util/result.h"

namespace memprof::hook::x86_64 {

enum class Flow {
  kNext,             // falls through to the next instruction
  kCall,
  kJump,             // unconditional
  kConditionalJump,
  kReturn,
  kStop,             // never falls through and is not a jump: int3, ud2, hlt
};

struct Instruction {
  uintptr_t address = 0;
  uint8_t length = 0;
  Flow flow = Flow::kNext;
  ZydisMnemonic mnemonic = ZYDIS_MNEMONIC_INVALID;
  // Relative branch (call/jmp/jcc rel8 or rel32): its absolute target.
  bool relative_branch = false;
  uintptr_t branch_target = 0;
  uint8_t condition = 0;  // jcc condition code (low nibble of the opcode)
  bool rel8_only = false; // jrcxz/jecxz/loop*: no rel32 encoding exists
  // RIP-relative memory operand: where its 32-bit displacement sits and what it addresses.
  bool rip_relative = false;
  uint8_t disp_offset = 0;
  uintptr_t rip_target = 0;

  uintptr_t end() const { return address + length; }
  bool ends_flow() const {
    return flow == Flow::kJump || flow == Flow::kReturn || flow == Flow::kStop;
  }
};

class Decoder {
 public:
  Decoder();
  // Decodes one instruction from `bytes` (at most `available` bytes readable) that lives at
  // `address`. Fails with "cannot decode the instruction at 0x...".
  Result<Instruction> decode(const uint8_t* bytes, size_t available, uintptr_t address) const;

 private:
  ZydisDecoder decoder_;
};

}  // namespace memprof::hook::x86_64
