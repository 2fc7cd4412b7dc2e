// Where the running thread's execution context (rb_execution_context_t *) lives.
//
// The hooks read the innermost frame's program counter from it (see Tracker::
// current_site_after_hook). Ruby keeps it in the thread-local `ruby_current_ec`, which Ruby 3.1
// exports but 3.3 and 3.4 do not (an extension referring to it fails to load: "undefined
// symbol: ruby_current_ec"), and a statically linked ruby has it in the executable's own TLS.
// So memprof finds it the way the 2009 tool found things: by decoding code. rb_thread_current
// is exported by every version and starts by reading ruby_current_ec; its first instructions
// name the variable in one of the x86-64 TLS access models:
//   general/local dynamic (a shared libruby):  lea rdi,[rip+X]; call __tls_get_addr; mov r,[rax+d]
//   initial exec:                              mov r,[rip+GOT]; mov r2,fs:[r]
//   local exec (the ruby executable):          mov r,imm; mov r2,fs:[r]   or   mov r,fs:[imm]
// (Ruby 2.x keeps it in a plain global, ruby_current_execution_context_ptr: mov r,[rip+GOT];
// mov r2,[r].)
// and the locator reads the same slot the same way. It is checked against the current thread's
// context before use: a Ruby-level frame stack that holds the control frame pointer.
#pragma once

#include <cstdint>

#include "core/util/result.h"
#include "ruby/ruby_headers.h"

extern "C" void* __tls_get_addr(void* index);  // ld.so; x86-64's argument is a tls_index*

namespace memprof::ruby {

class ExecutionContextLocator {
 public:
  // Decodes rb_thread_current in the running process and checks the result on this thread,
  // which must be a Ruby thread.
  static Result<ExecutionContextLocator> find();

  ExecutionContextHead* current() const noexcept {
    return *static_cast<ExecutionContextHead* const*>(slot());
  }

  // The innermost Ruby-level frame (not a C function's) of `ec`, starting at `cfp` itself, or
  // nullptr when there is none or the frame size is unknown: what rb_sourcefile() and
  // rb_sourceline() walk to, without their line-table search.
  ControlFrameHead* ruby_level_frame(const ExecutionContextHead* ec,
                                     ControlFrameHead* cfp) const noexcept {
    if (frame_words_ == 0) return nullptr;
    VALUE* end = ec->vm_stack + ec->vm_stack_size;  // control frames grow down from it
    for (auto* p = reinterpret_cast<VALUE*>(cfp); p < end; p += frame_words_) {
      auto* frame = reinterpret_cast<ControlFrameHead*>(p);
      if (frame->ep != nullptr && !(frame->ep[0] & kFrameFlagCFrame)) return frame;
    }
    return nullptr;
  }

  struct TlsIndex {  // the argument of __tls_get_addr, as the loader filled it in
    unsigned long module;
    unsigned long offset;
  };

  enum class Model { kThreadPointerOffset, kTlsIndex, kGlobal };
  // Built by find() from what the code says.
  static ExecutionContextLocator thread_pointer_offset(intptr_t offset);
  static ExecutionContextLocator tls_index(const TlsIndex* index, intptr_t offset);
  static ExecutionContextLocator global(const void* address);
  Model model() const { return model_; }

 private:
  // The address of this thread's ruby_current_ec. Inline: read on every allocation.
  const void* slot() const noexcept {
    switch (model_) {
      case Model::kThreadPointerOffset:
        return static_cast<const char*>(thread_pointer()) + offset_;
      case Model::kTlsIndex:
        return static_cast<const char*>(__tls_get_addr(const_cast<TlsIndex*>(index_))) + offset_;
      case Model::kGlobal:
        break;
    }
    return reinterpret_cast<const void*>(offset_);
  }
  static const void* thread_pointer() noexcept {
    const void* tp;
    asm("mov %%fs:0, %0" : "=r"(tp));  // the TCB's self pointer, %fs's base on x86-64 glibc
    return tp;
  }
  // sizeof(rb_control_frame_t) in words, which changed between versions (3.1 added jit_return
  // after __bp__, later versions dropped __bp__): found by find() on a live frame stack, 0 when
  // no candidate fits it.
  static size_t control_frame_words(const ExecutionContextHead* ec) noexcept;

  Model model_ = Model::kThreadPointerOffset;
  intptr_t offset_ = 0;  // from %fs's base; added to the TLS block address; kGlobal: the address
  const TlsIndex* index_ = nullptr;  // kTlsIndex
  size_t frame_words_ = 0;
};

// The process-wide locator: found once (on the first Ruby thread that asks), then read by the
// hot path. Fails with find()'s error, remembered.
Result<const ExecutionContextLocator*> execution_context_locator();

}  // namespace memprof::ruby
