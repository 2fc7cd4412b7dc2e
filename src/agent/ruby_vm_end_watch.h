// Notices the end of Ruby's VM (ruby_vm_destruct, at the end of ruby_cleanup): from then on a
// thread's execution context points at freed memory, yet ruby_thread_has_gvl_p still says yes,
// and exit handlers and library destructors go on calling malloc. ruby_location (ruby_caller.h)
// must stop reading Ruby's frames there; this watch, an entry hook on ruby_vm_destruct, tells it
// when. Held by whoever reads Ruby lines (native sessions, traces with --ruby-caller); every
// patched byte is restored when the last one goes.
#pragma once

#include <memory>

#include "core/hook/entry_hook.h"
#include "core/util/result.h"

namespace memprof::agent {

class RubyVmEndWatch {
 public:
  static Result<std::unique_ptr<RubyVmEndWatch>> install();

 private:
  explicit RubyVmEndWatch(std::unique_ptr<hook::EntryHook> hook) : hook_(std::move(hook)) {}
  std::unique_ptr<hook::EntryHook> hook_;
};

// True once ruby_vm_destruct was called while a watch was installed.
bool ruby_vm_ended() noexcept;

}  // namespace memprof::agent
