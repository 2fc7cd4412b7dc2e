#include "ruby/execution_context.h"

#include <Zydis/Zydis.h>
#include <dlfcn.h>

#include <array>
#include <cstring>
#include <mutex>
#include <optional>

namespace memprof::ruby {

namespace {

// What a register holds while decoding rb_thread_current's first instructions.
struct Value {
  enum Kind { kUnknown, kConstant, kAddress, kThreadPointer, kTlsBlock } kind = kUnknown;
  uint64_t number = 0;  // kConstant: the value; kAddress: an address in the image (a tls_index)
};

uint64_t read_word(uintptr_t address) {
  uint64_t value;
  __builtin_memcpy(&value, reinterpret_cast<const void*>(address), sizeof value);  // ruby.h redefines memcpy
  return value;
}

// Where a call lands: through a PLT stub (`jmp [rip+GOT]`, possibly after endbr64) or
// directly; `call [rip+GOT]` (-fno-plt) reads the slot.
uintptr_t call_destination(const ZydisDecoder& decoder, const ZydisDecodedOperand& target,
                           uintptr_t next) {
  if (target.type == ZYDIS_OPERAND_TYPE_MEMORY && target.mem.base == ZYDIS_REGISTER_RIP)
    return read_word(next + target.mem.disp.value);
  if (target.type != ZYDIS_OPERAND_TYPE_IMMEDIATE || !target.imm.is_relative) return 0;
  uintptr_t stub = next + target.imm.value.s;
  for (int i = 0; i < 2; ++i) {  // endbr64, then the jump
    ZydisDecodedInstruction jump;
    std::array<ZydisDecodedOperand, ZYDIS_MAX_OPERAND_COUNT> ops;
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, reinterpret_cast<const void*>(stub), 16,
                                             &jump, ops.data())))
      return 0;
    if (jump.mnemonic == ZYDIS_MNEMONIC_ENDBR64) {
      stub += jump.length;
      continue;
    }
    if (jump.mnemonic == ZYDIS_MNEMONIC_JMP && ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY &&
        ops[0].mem.base == ZYDIS_REGISTER_RIP)
      return read_word(stub + jump.length + ops[0].mem.disp.value);
    return stub;  // not a stub: the function itself
  }
  return 0;
}

// Follows rb_thread_current from its entry to the first load of ruby_current_ec.
Result<ExecutionContextLocator> decode_accessor(uintptr_t entry) {
  ZydisDecoder decoder;
  ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
  auto tls_get_addr = reinterpret_cast<uintptr_t>(&__tls_get_addr);
  std::array<Value, ZYDIS_REGISTER_MAX_VALUE + 1> regs{};
  uintptr_t address = entry;
  for (int count = 0; count < 16; ++count) {
    ZydisDecodedInstruction insn;
    std::array<ZydisDecodedOperand, ZYDIS_MAX_OPERAND_COUNT> ops;
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, reinterpret_cast<const void*>(address), 16,
                                             &insn, ops.data())))
      return err("rb_thread_current: cannot decode the instruction at {:#x}", address);
    uintptr_t next = address + insn.length;
    const ZydisDecodedOperand& dst = ops[0];
    const ZydisDecodedOperand& src = ops[1];
    bool to_register = insn.operand_count_visible >= 1 && dst.type == ZYDIS_OPERAND_TYPE_REGISTER;
    if (insn.mnemonic == ZYDIS_MNEMONIC_RET || insn.mnemonic == ZYDIS_MNEMONIC_JMP) break;

    if (insn.mnemonic == ZYDIS_MNEMONIC_CALL) {
      if (call_destination(decoder, dst, next) == tls_get_addr &&
          regs[ZYDIS_REGISTER_RDI].kind == Value::kAddress)
        regs[ZYDIS_REGISTER_RAX] = {Value::kTlsBlock, regs[ZYDIS_REGISTER_RDI].number};
      else
        regs[ZYDIS_REGISTER_RAX] = {};
    } else if (insn.mnemonic == ZYDIS_MNEMONIC_LEA && to_register &&
               src.mem.base == ZYDIS_REGISTER_RIP) {
      regs[dst.reg.value] = {Value::kAddress, next + src.mem.disp.value};
    } else if (insn.mnemonic == ZYDIS_MNEMONIC_MOV && to_register &&
               src.type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
      regs[dst.reg.value] = {Value::kConstant, static_cast<uint64_t>(src.imm.value.s)};
    } else if (insn.mnemonic == ZYDIS_MNEMONIC_MOV && to_register &&
               src.type == ZYDIS_OPERAND_TYPE_MEMORY && src.mem.index == ZYDIS_REGISTER_NONE) {
      int64_t disp = src.mem.disp.has_displacement ? src.mem.disp.value : 0;
      const Value base = src.mem.base == ZYDIS_REGISTER_NONE ? Value{Value::kConstant, 0}
                         : src.mem.base == ZYDIS_REGISTER_RIP ? Value{Value::kAddress, next}
                                                               : regs[src.mem.base];
      if (src.mem.segment == ZYDIS_REGISTER_FS) {
        // fs:[0] is the thread pointer itself; any other fs: load is the variable.
        if (base.kind == Value::kConstant && base.number + disp == 0)
          regs[dst.reg.value] = {Value::kThreadPointer, 0};
        else if (base.kind == Value::kConstant)
          return ExecutionContextLocator::thread_pointer_offset(
              static_cast<intptr_t>(base.number + disp));
        else
          return err("rb_thread_current: unexpected %fs access at {:#x}", address);
      } else if (base.kind == Value::kThreadPointer) {
        return ExecutionContextLocator::thread_pointer_offset(disp);
      } else if (base.kind == Value::kTlsBlock) {
        return ExecutionContextLocator::tls_index(
            reinterpret_cast<const ExecutionContextLocator::TlsIndex*>(base.number), disp);
      } else if (base.kind == Value::kAddress) {
        // A GOT slot the loader filled in: for initial exec, the variable's offset from %fs;
        // for a plain global (Ruby 2.x's ruby_current_execution_context_ptr), its address.
        regs[dst.reg.value] = {Value::kConstant, read_word(base.number + disp)};
      } else if (base.kind == Value::kConstant) {
        return ExecutionContextLocator::global(reinterpret_cast<const void*>(base.number + disp));
      } else {
        regs[dst.reg.value] = {};
      }
    } else if (to_register) {
      regs[dst.reg.value] = {};
    }
    address = next;
  }
  return err("rb_thread_current at {:#x} reads no thread-local variable the way memprof knows",
             entry);
}

// Whether `ec` looks like this thread's execution context: a VM stack that holds the control
// frame pointer (control frames grow down from the top of the VM stack).
bool plausible(const ExecutionContextHead* ec) {
  if (ec == nullptr || ec->vm_stack == nullptr) return false;
  if (ec->vm_stack_size == 0 || ec->vm_stack_size > (size_t{1} << 28)) return false;
  auto low = reinterpret_cast<uintptr_t>(ec->vm_stack);
  auto high = low + ec->vm_stack_size * sizeof(VALUE);
  auto cfp = reinterpret_cast<uintptr_t>(ec->cfp);
  return cfp >= low && cfp < high;
}

}  // namespace

ExecutionContextLocator ExecutionContextLocator::thread_pointer_offset(intptr_t offset) {
  ExecutionContextLocator locator;
  locator.model_ = Model::kThreadPointerOffset;
  locator.offset_ = offset;
  return locator;
}

ExecutionContextLocator ExecutionContextLocator::tls_index(const TlsIndex* index,
                                                           intptr_t offset) {
  ExecutionContextLocator locator;
  locator.model_ = Model::kTlsIndex;
  locator.index_ = index;
  locator.offset_ = offset;
  return locator;
}

ExecutionContextLocator ExecutionContextLocator::global(const void* address) {
  ExecutionContextLocator locator;
  locator.model_ = Model::kGlobal;
  locator.offset_ = reinterpret_cast<intptr_t>(address);
  return locator;
}

// The frame stack of `ec` read with each candidate size: the right one lands exactly on the
// stack's end, every frame it reads has its stack pointer on the VM stack, and an environment
// there (an escaped one lives in the heap) whose flags word holds a frame type. A wrong size
// reads other fields (pc, iseq, ...) as the second frame's stack pointer. Nothing outside the
// VM stack is dereferenced: a wrong size can make `ep` any word. Called from Memprof.start (a C
// function called from Ruby: at least the dummy top frame, a Ruby frame and its own).
size_t ExecutionContextLocator::control_frame_words(const ExecutionContextHead* ec) noexcept {
  const VALUE* low = ec->vm_stack;
  const VALUE* end = ec->vm_stack + ec->vm_stack_size;
  auto on_stack = [&](const VALUE* p) { return p >= low && p < end; };
  auto fits = [&](size_t words) {
    const auto* p = reinterpret_cast<const VALUE*>(ec->cfp);
    size_t frames = 0;
    for (; p != end; p += words, ++frames) {
      if (end - p < static_cast<ptrdiff_t>(words)) return false;  // would read past the stack
      const auto* frame = reinterpret_cast<const ControlFrameHead*>(p);
      if (!on_stack(frame->sp)) return false;
      if (on_stack(frame->ep) && !is_frame_flags(frame->ep[0])) return false;
    }
    return frames >= 2;
  };
  // 2.7/3.0: pc, sp, iseq, self, ep, block_code, __bp__; 3.1: and jit_return; 3.3, 3.4:
  // jit_return instead of __bp__ (vm_core.h). A debug build of Ruby adds bp_check.
  for (size_t words : {7, 8, 9})
    if (fits(words)) return words;
  return 0;
}

Result<ExecutionContextLocator> ExecutionContextLocator::find() {
  void* accessor = dlsym(RTLD_DEFAULT, "rb_thread_current");
  if (accessor == nullptr) return err("rb_thread_current is not exported by this process");
  MEMPROF_TRY(locator, decode_accessor(reinterpret_cast<uintptr_t>(accessor)));
  if (!plausible(locator.current()))
    return err("the thread-local variable rb_thread_current reads does not hold this thread's "
               "execution context");
  locator.frame_words_ = control_frame_words(locator.current());
  return locator;
}

Result<const ExecutionContextLocator*> execution_context_locator() {
  static std::once_flag once;
  static std::optional<Result<ExecutionContextLocator>> found;
  std::call_once(once, [] { found.emplace(ExecutionContextLocator::find()); });
  if (!found->ok()) return found->error();
  return &found->value();
}

}  // namespace memprof::ruby
