// Notices the end of Ruby's VM (ruby_vm_destruct, at the end of ruby_cleanup): from then on a
// thread's execution context points at freed memory, yet ruby_thread_has_gvl_p still says yes,
// and exit handlers and library destructors go on calling malloc. ruby_location (ruby_caller.h)
// must stop reading Ruby's frames there, and no job may be posted to the VM any more (posting
// one wrote into the freed main thread: a segfault in exit()). This watch, an entry hook on
// ruby_vm_destruct, tells them when. Shared by whoever needs it: Ruby lines (native sessions,
// traces with --ruby-caller), ruby:gc, and the Ruby runtime while an attach lasts; every
// patched byte is restored when the last holder lets go.
#pragma once

#include <memory>

#include "core/hook/entry_hook.h"
#include "core/util/result.h"

namespace memprof::agent {

class RubyVmEndWatch {
 public:
  // Makes `holder` one of the watch's holders, unless it is already; the first installs the
  // watch (only the agent's thread calls this).
  static Status hold(std::shared_ptr<RubyVmEndWatch>& holder);

 private:
  static Result<std::shared_ptr<RubyVmEndWatch>> acquire();
  explicit RubyVmEndWatch(std::unique_ptr<hook::EntryHook> hook) : hook_(std::move(hook)) {}
  std::unique_ptr<hook::EntryHook> hook_;
};

// True once ruby_vm_destruct was called while a watch was installed.
bool ruby_vm_ended() noexcept;

// While one exists, the VM does not start to end (ruby_vm_destruct waits for it at its entry):
// for posting a job, never for anything that waits on Ruby. ok() is false once the VM has ended.
class VmInUse {
 public:
  VmInUse() noexcept;
  ~VmInUse();
  VmInUse(const VmInUse&) = delete;
  VmInUse& operator=(const VmInUse&) = delete;
  bool ok() const noexcept { return ok_; }

 private:
  bool ok_;
};

// In a forked child: the parent's agent thread, which may have held one, is not here.
void forget_vm_users_in_child() noexcept;

}  // namespace memprof::agent
