#include "core/hook/x86_64/relocator.h"

#include <cstring>

#include "core/hook/x86_64/code_writer.h"

namespace memprof::hook::x86_64 {
namespace {

constexpr size_t kMaxInstructionLength = 15;

const uint8_t* at(uintptr_t address) { return reinterpret_cast<const uint8_t*>(address); }

}  // namespace

Result<Prologue> measure_prologue(const Decoder& decoder, uintptr_t source, size_t min_bytes) {
  Prologue prologue;
  while (prologue.bytes < min_bytes) {
    MEMPROF_TRY(insn, decoder.decode(at(source + prologue.bytes), kMaxInstructionLength,
                                     source + prologue.bytes));
    prologue.bytes += insn.length;
    ++prologue.instructions;
    if (insn.ends_flow() && prologue.bytes < min_bytes)
      return err("the function at {:#x} ends after {} bytes, before the {}-byte jump fits",
                 source, prologue.bytes, min_bytes);
  }
  return prologue;
}

Result<std::vector<uint8_t>> relocate_prologue(const Decoder& decoder, uintptr_t source,
                                               const Prologue& prologue, uintptr_t destination) {
  CodeWriter out(destination);
  uintptr_t displaced_end = source + prologue.bytes;
  for (uintptr_t address = source; address < displaced_end;) {
    MEMPROF_TRY(insn, decoder.decode(at(address), kMaxInstructionLength, address));
    // A call copied into the trampoline would push a return address there, where no unwind
    // information is: a C++ exception thrown below it (or a backtrace taken there) finds no FDE
    // for that frame, and std::terminate ends the process. So the call is emulated as it runs
    // in place: the return address pushed is the one after the call in the function itself,
    // whose unwind information covers it, and the callee is jumped to. The callee returns into
    // the function, which goes on there: a rel32 call is 5 bytes, so that address is past the
    // jump the hook writes, and nothing displaced after the call runs from the trampoline.
    // (89 exported functions of Debian's libruby have a call among those bytes, as in
    // `sub $8,%rsp; call f`.) An indirect call, whose operand the push could move (rsp-based),
    // is refused.
    if (insn.flow == Flow::kCall) {
      if (!insn.relative_branch)
        return err("the indirect call at {:#x} is within the first {} bytes of the function at {:#x}", address,
                   prologue.bytes, source);
      out.push_u64(insn.end());
      out.jump(insn.branch_target);
      return out.take();
    }
    if (insn.relative_branch) {
      if (insn.branch_target >= source && insn.branch_target < displaced_end)
        return err("the branch at {:#x} targets the displaced bytes {:#x}-{:#x}", address, source,
                   displaced_end);
      if (insn.rel8_only)
        return err("cannot relocate the instruction at {:#x}: jrcxz/loop have no rel32 form",
                   address);
      switch (insn.flow) {
        case Flow::kJump: out.jump(insn.branch_target); break;
        case Flow::kConditionalJump: out.jump_if(insn.condition, insn.branch_target); break;
        default:
          return err("cannot relocate the relative instruction at {:#x}", address);
      }
    } else if (insn.rip_relative) {
      uintptr_t new_address = out.here();
      if (!rel32_reaches(new_address + insn.length, insn.rip_target))
        return err("the RIP-relative operand at {:#x} (to {:#x}) is out of reach from the "
                   "trampoline at {:#x}",
                   address, insn.rip_target, new_address);
      uint8_t copy[kMaxInstructionLength];
      std::memcpy(copy, at(address), insn.length);
      auto disp = static_cast<int32_t>(insn.rip_target - (new_address + insn.length));
      std::memcpy(copy + insn.disp_offset, &disp, 4);
      out.bytes(copy, insn.length);
    } else {
      out.bytes(at(address), insn.length);
    }
    address += insn.length;
  }
  out.jump(displaced_end);
  return out.take();
}

}  // namespace memprof::hook::x86_64
