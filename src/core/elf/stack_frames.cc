// Prologue analysis with Zydis: how much stack each function reserves.
#include "core/elf/stack_frames.h"

#include <Zydis/Zydis.h>
#include <elf.h>

#include <algorithm>
#include <optional>
#include <unordered_set>
#include <vector>

namespace memprof::elf {

namespace {

// Bounds the work per function: prologues are short, and shrink-wrapped ones sit behind a few
// early-exit branches at most.
constexpr int kMaxInstructions = 256;

bool is_register(const ZydisDecodedOperand& op, ZydisRegister reg) {
  return op.type == ZYDIS_OPERAND_TYPE_REGISTER && op.reg.value == reg;
}

std::optional<int64_t> immediate(const ZydisDecodedOperand& op) {
  if (op.type != ZYDIS_OPERAND_TYPE_IMMEDIATE) return std::nullopt;
  return op.imm.value.s;
}

// [rsp + disp] without an index register: the displacement.
std::optional<int64_t> rsp_displacement(const ZydisDecodedOperand& op) {
  if (op.type != ZYDIS_OPERAND_TYPE_MEMORY || op.mem.base != ZYDIS_REGISTER_RSP ||
      op.mem.index != ZYDIS_REGISTER_NONE) {
    return std::nullopt;
  }
  return op.mem.disp.value;
}

// One path through the prologue: where it is and how far rsp has moved down from the entry.
struct PathState {
  uint64_t offset = 0;
  int64_t frame = 0;
  // Set by "lea rX, [rsp - N]": the register and the frame the probing loop will end at.
  ZydisRegister probe_register = ZYDIS_REGISTER_NONE;
  int64_t probe_frame = 0;
};

}  // namespace

uint64_t prologue_frame_bytes(Bytes code) {
  ZydisDecoder decoder;
  if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
    return 0;
  }
  // Explore every path from the entry (both sides of conditional branches, so a shrink-wrapped
  // prologue behind an early exit is found) until a call, a return or leaving the function. The
  // frame is the deepest rsp reached on any path.
  int64_t deepest = 0;
  std::vector<PathState> pending{PathState{}};
  std::unordered_set<uint64_t> visited;
  int budget = kMaxInstructions;
  while (!pending.empty() && budget > 0) {
    PathState state = pending.back();
    pending.pop_back();
    while (budget-- > 0 && state.offset < code.size() && visited.insert(state.offset).second) {
      ZydisDecodedInstruction insn;
      ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
      if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, code.data() + state.offset,
                                               code.size() - state.offset, &insn, ops))) {
        break;
      }
      uint64_t next = state.offset + insn.length;
      bool writes_rsp = insn.operand_count_visible >= 1 && is_register(ops[0], ZYDIS_REGISTER_RSP);
      auto second = insn.operand_count_visible >= 2 ? immediate(ops[1]) : std::nullopt;
      bool ends_path = false;

      switch (insn.mnemonic) {
        case ZYDIS_MNEMONIC_PUSH:
        case ZYDIS_MNEMONIC_PUSHFQ:
          state.frame += insn.operand_width / 8;
          break;
        case ZYDIS_MNEMONIC_POP:
        case ZYDIS_MNEMONIC_POPFQ:
          state.frame -= insn.operand_width / 8;
          break;
        case ZYDIS_MNEMONIC_SUB:
          if (writes_rsp && second) state.frame += *second;
          break;
        case ZYDIS_MNEMONIC_ADD:
          if (writes_rsp && second) state.frame -= *second;
          break;
        case ZYDIS_MNEMONIC_ENTER:
          state.frame += 8 + (insn.operand_count_visible >= 1 ? immediate(ops[0]).value_or(0) : 0);
          break;
        case ZYDIS_MNEMONIC_LEA:
          if (auto disp = rsp_displacement(ops[1])) {
            if (writes_rsp) {
              state.frame -= *disp;
            } else if (*disp < 0 && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER) {
              // Possibly the end of a stack-clash probing loop; confirmed by the cmp/jne below.
              state.probe_register = ops[0].reg.value;
              state.probe_frame = state.frame - *disp;
            }
          }
          break;
        case ZYDIS_MNEMONIC_CMP:
          // "cmp rsp, r11; jne loop": the loop runs until rsp reaches the lea'd address, so the
          // frame at the loop's exit is exactly that address's depth.
          if (state.probe_register != ZYDIS_REGISTER_NONE && insn.operand_count_visible == 2 &&
              ((is_register(ops[0], ZYDIS_REGISTER_RSP) && is_register(ops[1], state.probe_register)) ||
               (is_register(ops[1], ZYDIS_REGISTER_RSP) && is_register(ops[0], state.probe_register)))) {
            state.frame = state.probe_frame;
            state.probe_register = ZYDIS_REGISTER_NONE;
            deepest = std::max(deepest, state.frame);
            // Skip the loop's backward branch: the exit is the fall-through.
            ZydisDecodedInstruction branch;
            ZydisDecodedOperand branch_ops[ZYDIS_MAX_OPERAND_COUNT];
            if (next < code.size() &&
                ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, code.data() + next, code.size() - next,
                                                    &branch, branch_ops)) &&
                branch.meta.category == ZYDIS_CATEGORY_COND_BR) {
              next += branch.length;
            }
          }
          break;
        default:
          break;
      }
      if (state.frame > deepest) deepest = state.frame;

      switch (insn.meta.category) {
        case ZYDIS_CATEGORY_CALL:
        case ZYDIS_CATEGORY_RET:
        case ZYDIS_CATEGORY_INTERRUPT:
        case ZYDIS_CATEGORY_SYSTEM:
          ends_path = true;
          break;
        case ZYDIS_CATEGORY_COND_BR:
        case ZYDIS_CATEGORY_UNCOND_BR: {
          ZyanU64 target = 0;
          bool direct = insn.operand_count_visible >= 1 &&
                        ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
                        ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn, &ops[0], state.offset, &target));
          if (direct && target < code.size()) {
            PathState branch_state = state;
            branch_state.offset = target;
            if (insn.meta.category == ZYDIS_CATEGORY_COND_BR) {
              pending.push_back(branch_state);
            } else {
              state = branch_state;
              continue;
            }
          } else if (insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR) {
            ends_path = true;  // tail call or indirect jump
          }
          break;
        }
        default:
          break;
      }
      if (ends_path || insn.mnemonic == ZYDIS_MNEMONIC_UD2 || insn.mnemonic == ZYDIS_MNEMONIC_HLT) {
        break;
      }
      state.offset = next;
    }
  }
  return static_cast<uint64_t>(deepest);
}

std::vector<FunctionFrame> function_frames(const ObjectSymbols& symbols) {
  std::vector<FunctionFrame> frames;
  uint64_t previous_address = UINT64_MAX;
  for (const auto& entry : symbols.entries()) {
    if ((entry.type != STT_FUNC && entry.type != STT_GNU_IFUNC) || entry.size == 0) continue;
    // Aliases share an address (entries are sorted by address): report the function once.
    if (entry.address == previous_address) continue;
    previous_address = entry.address;
    auto code = symbols.file().bytes_at_address(entry.address, entry.size);
    if (!code) continue;
    frames.push_back(FunctionFrame{entry.name, entry.address, prologue_frame_bytes(*code)});
  }
  std::sort(frames.begin(), frames.end(), [](const FunctionFrame& a, const FunctionFrame& b) {
    if (a.frame_bytes != b.frame_bytes) return a.frame_bytes > b.frame_bytes;
    return a.function < b.function;
  });
  return frames;
}

}  // namespace memprof::elf
