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

namespace memprof::ruby {

class ExecutionContextLocator {
 public:
  // Decodes rb_thread_current in the running process and checks the result on this thread,
  // which must be a Ruby thread.
  static Result<ExecutionContextLocator> find();

  ExecutionContextHead* current() const noexcept {
    return *static_cast<ExecutionContextHead* const*>(slot());
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
  // The address of this thread's ruby_current_ec.
  const void* slot() const noexcept;

  Model model_ = Model::kThreadPointerOffset;
  intptr_t offset_ = 0;  // from %fs's base; added to the TLS block address; kGlobal: the address
  const TlsIndex* index_ = nullptr;  // kTlsIndex
};

// The process-wide locator: found once (on the first Ruby thread that asks), then read by the
// hot path. Fails with find()'s error, remembered.
Result<const ExecutionContextLocator*> execution_context_locator();

}  // namespace memprof::ruby
