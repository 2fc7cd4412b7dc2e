#include "core/hook/x86_64/decoder.h"

namespace memprof::hook::x86_64 {

Decoder::Decoder() {
  ZydisDecoderInit(&decoder_, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
}

Result<Instruction> Decoder::decode(const uint8_t* bytes, size_t available,
                                    uintptr_t address) const {
  ZydisDecodedInstruction raw;
  if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder_, nullptr, bytes, available, &raw)))
    return err("cannot decode the instruction at {:#x}", address);
  Instruction insn;
  insn.address = address;
  insn.length = raw.length;
  insn.mnemonic = raw.mnemonic;
  switch (raw.meta.category) {
    case ZYDIS_CATEGORY_CALL: insn.flow = Flow::kCall; break;
    case ZYDIS_CATEGORY_UNCOND_BR: insn.flow = Flow::kJump; break;
    case ZYDIS_CATEGORY_COND_BR: insn.flow = Flow::kConditionalJump; break;
    case ZYDIS_CATEGORY_RET: insn.flow = Flow::kReturn; break;
    default:
      if (raw.mnemonic == ZYDIS_MNEMONIC_INT3 || raw.mnemonic == ZYDIS_MNEMONIC_UD2 ||
          raw.mnemonic == ZYDIS_MNEMONIC_HLT)
        insn.flow = Flow::kStop;
      break;
  }
  if (raw.raw.imm[0].is_relative) {
    insn.relative_branch = true;
    insn.branch_target = address + raw.length + static_cast<uint64_t>(raw.raw.imm[0].value.s);
    insn.condition = raw.opcode & 0x0f;
    insn.rel8_only = raw.mnemonic == ZYDIS_MNEMONIC_JRCXZ || raw.mnemonic == ZYDIS_MNEMONIC_JECXZ ||
                     raw.mnemonic == ZYDIS_MNEMONIC_JCXZ || raw.mnemonic == ZYDIS_MNEMONIC_LOOP ||
                     raw.mnemonic == ZYDIS_MNEMONIC_LOOPE || raw.mnemonic == ZYDIS_MNEMONIC_LOOPNE;
  }
  // In 64-bit mode, ModRM mod=00 rm=101 without SIB addresses memory relative to the next
  // instruction's address.
  if ((raw.attributes & ZYDIS_ATTRIB_HAS_MODRM) && raw.raw.modrm.mod == 0 &&
      raw.raw.modrm.rm == 5 && raw.raw.disp.size == 32) {
    insn.rip_relative = true;
    insn.disp_offset = raw.raw.disp.offset;
    insn.rip_target = address + raw.length + static_cast<uint64_t>(raw.raw.disp.value);
  }
  return insn;
}

}  // namespace memprof::hook::x86_64
