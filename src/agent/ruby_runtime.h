// The Ruby VM of the process the agent runs in, reached without linking libruby: the agent is
// one library for every Ruby version (and for processes with no Ruby at all), so it finds
// Ruby's C API with dlsym at run time.
//
// The agent's own thread is not a Ruby thread: it must never call into Ruby directly (on a
// thread Ruby does not know, rb_funcall and rb_sourcefile dereference a NULL execution context,
// and rb_thread_call_with_gvl prints [BUG] and calls exit). Everything that needs Ruby runs as
// a postponed job, which Ruby executes on one of its own threads holding the GVL, outside GC:
//   Ruby 3.3+   rb_postponed_job_preregister once, rb_postponed_job_trigger per request;
//   3.1 / 3.2   rb_postponed_job_register_one, with non-NULL data (Bug #19991).
// A job runs at the next interrupt check. A main thread blocked in a system call gets Ruby's
// own wake-up signal, SIGVTALRM (Ruby installs a no-op handler for it so that blocking calls
// return EINTR and check interrupts), then if needed SIGCHLD, about once a second (see
// wake_main_thread); a
// thread that cannot be woken is named in the error ("main thread is in read(2)") instead of
// making the caller hang.
#pragma once

#include <dlfcn.h>
#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "agent/ruby_vm_end_watch.h"
#include "core/util/result.h"

namespace memprof::agent {

using RubyValue = uintptr_t;

// The C API functions the agent calls, all from a postponed job (a Ruby thread with the GVL).
struct RubyApi {
  const int* api_version = nullptr;  // ruby_api_version: {major, minor, teeny}
  const char* version = nullptr;     // ruby_version: "3.3.8"
  // Postponed jobs: 3.3+ ...
  unsigned (*job_preregister)(unsigned flags, void (*func)(void*), void* data) = nullptr;
  void (*job_trigger)(unsigned handle) = nullptr;
  // ... and before.
  int (*job_register_one)(unsigned flags, void (*func)(void*), void* data) = nullptr;
  // After a fork, in the child: Ruby forgets the parent's other threads (what Process.fork
  // does in the child).
  void (*thread_atfork)() = nullptr;
  RubyValue (*protect)(RubyValue (*func)(RubyValue), RubyValue arg, int* state) = nullptr;
  RubyValue (*str_new)(const char* bytes, long length) = nullptr;
  RubyValue (*define_module)(const char* name) = nullptr;
  RubyValue (*ivar_set)(RubyValue object, unsigned long id, RubyValue value) = nullptr;
  unsigned long (*intern)(const char* name) = nullptr;
  RubyValue (*funcallv)(RubyValue receiver, unsigned long method, int argc,
                        const RubyValue* argv) = nullptr;
  char* (*string_value_ptr)(volatile RubyValue* string) = nullptr;
  long (*num2long)(RubyValue number) = nullptr;
  RubyValue (*errinfo)() = nullptr;
  void (*set_errinfo)(RubyValue error) = nullptr;
  // A full collection and the collections so far (`memprof native`'s last readout); optional.
  void (*gc)() = nullptr;
  size_t (*gc_count)() = nullptr;
  // An end proc (rb_set_end_proc): the collection at a Ruby process's end; optional.
  void (*set_end_proc)(void (*func)(RubyValue), RubyValue data) = nullptr;
  // rb_cObject: set during Ruby's boot, after the VM and the main thread exist (Ruby 3.3 no
  // longer exports ruby_current_vm_ptr).
  const RubyValue* object_class = nullptr;
};

// `slot` = the function or variable `name` of this process (the first object defining it), or
// null: how the agent reaches Ruby's C API without linking libruby.
template <typename T>
void resolve(T& slot, const char* name) {
  slot = reinterpret_cast<T>(dlsym(RTLD_DEFAULT, name));
}

// Finds Ruby in this process: nothing when it has none (or one older than memprof supports).
std::optional<RubyApi> find_ruby_api();

// Runs work on a Ruby thread and waits for it. One request at a time (the agent serves one
// connection at a time).
class RubyRuntime {
 public:
  explicit RubyRuntime(const RubyApi& api);
  RubyRuntime(const RubyRuntime&) = delete;
  RubyRuntime& operator=(const RubyRuntime&) = delete;

  const RubyApi& api() const { return api_; }
  std::string version() const { return api_.version != nullptr ? api_.version : "?"; }
  // Whether the VM has been created (a process launched with the agent preloaded starts it
  // after the agent's thread).
  bool vm_ready() const { return api_.object_class != nullptr && *api_.object_class != 0; }

  // Runs `work` on a Ruby thread holding the GVL and returns its result, or an error when Ruby
  // did not run it within `timeout` (naming what the main thread is doing). `work` must not
  // throw. If it has not started by then, it never will; once started, it is waited for.
  Result<std::string> run(std::function<Result<std::string>(const RubyApi&)> work,
                          std::chrono::milliseconds timeout);

  // In a forked child: the parent's agent thread may have held the lock or left a request
  // queued; Ruby's registration of the job (this object) is inherited and stays valid.
  void reset_after_fork();

  // Watches the VM's end, so that no job is posted to a VM that has ended, until released (an
  // attach: from its load to its detach; sessions hold their own). Held here, not by the
  // request handler: a forked child's runtime is its parent's, whole, and its detach lets go.
  Status watch_vm_end();
  void release_vm_end_watch() { vm_end_watch_.reset(); }

 private:
  enum class State { kIdle, kQueued, kRunning, kDone };
  static void job_entry(void* self);
  [[gnu::noinline]] void run_queued_job();
  bool trigger();
  void wake_main_thread(bool insist) const;

  RubyApi api_;
  unsigned handle_ = ~0U;
  bool handle_registered_ = false;
  std::mutex mutex_;
  std::condition_variable done_;
  State state_ = State::kIdle;
  std::function<Result<std::string>(const RubyApi&)> work_;
  int (*set_thread_paused_)(int) = nullptr;  // the gem extension's, when loaded
  Result<std::string> result_{std::string()};
  std::shared_ptr<RubyVmEndWatch> vm_end_watch_;
};

// While a job runs, on its thread: the lowest address of the frames of the code it interrupted
// (the frames below are the job's; a heap dump's child leaves out the roots only they hold:
// ruby/heap_at_fork.h). Null outside a job.
const void* interrupted_frames_end();

// "main thread is in read(2)" / "main thread is running" — for messages, from /proc.
std::string describe_main_thread();

}  // namespace memprof::agent
