#include "agent/ruby_runtime.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <new>
#include <thread>

#include "agent/ruby_vm_end_watch.h"
#include "core/util/proc_file.h"
#include "core/util/stack_scrub.h"
#include "inject/waiting_syscalls.h"

namespace memprof::agent {

namespace {

// While it waits, the agent repeats Ruby's wake-up this often: a signal that arrives just
// before the main thread blocks is lost.
constexpr std::chrono::milliseconds kWakeInterval{50};
// When SIGVTALRM has not been enough by then, SIGCHLD; again every 0.9 s (wake_main_thread).
constexpr std::chrono::milliseconds kInsistAfter{300};
constexpr const char* kVmEnded = "Ruby's VM has ended in this process (it is exiting)";

}  // namespace

std::optional<RubyApi> find_ruby_api() {
  RubyApi api;
  resolve(api.api_version, "ruby_api_version");
  resolve(api.version, "ruby_version");
  resolve(api.job_preregister, "rb_postponed_job_preregister");
  resolve(api.job_trigger, "rb_postponed_job_trigger");
  resolve(api.job_register_one, "rb_postponed_job_register_one");
  resolve(api.thread_atfork, "rb_thread_atfork");
  resolve(api.protect, "rb_protect");
  resolve(api.str_new, "rb_str_new");
  resolve(api.define_module, "rb_define_module");
  resolve(api.ivar_set, "rb_ivar_set");
  resolve(api.intern, "rb_intern");
  resolve(api.funcallv, "rb_funcallv");
  resolve(api.string_value_ptr, "rb_string_value_ptr");
  resolve(api.num2long, "rb_num2long");
  resolve(api.errinfo, "rb_errinfo");
  resolve(api.set_errinfo, "rb_set_errinfo");
  resolve(api.object_class, "rb_cObject");
  resolve(api.gc, "rb_gc");
  resolve(api.gc_count, "rb_gc_count");
  resolve(api.set_end_proc, "rb_set_end_proc");
  bool has_jobs = (api.job_preregister != nullptr && api.job_trigger != nullptr) ||
                  api.job_register_one != nullptr;
  if (api.api_version == nullptr || !has_jobs || api.thread_atfork == nullptr ||
      api.protect == nullptr || api.str_new == nullptr || api.define_module == nullptr ||
      api.ivar_set == nullptr || api.intern == nullptr || api.funcallv == nullptr ||
      api.string_value_ptr == nullptr || api.num2long == nullptr || api.errinfo == nullptr ||
      api.set_errinfo == nullptr || api.object_class == nullptr)
    return std::nullopt;
  // Up to 3.0, register_one from a thread Ruby does not know crashes (ruby/ruby#4108).
  if (api.api_version[0] < 3 || (api.api_version[0] == 3 && api.api_version[1] < 1))
    return std::nullopt;
  return api;
}

RubyRuntime::RubyRuntime(const RubyApi& api) : api_(api) {}

namespace {
// One job runs at a time (run() waits for it), on the thread that runs it.
const void* g_interrupted_frames_end = nullptr;
}  // namespace

const void* interrupted_frames_end() { return g_interrupted_frames_end; }

void RubyRuntime::job_entry(void* self) {
  // Every callee-saved register of the interrupted code is saved in this frame, so what it held
  // in registers is above the stack pointer taken here, with its frames.
  // (A trigger that arrives while the job's own Ruby code runs finds no job queued; it must not
  // move the mark meanwhile.)
  __builtin_unwind_init();
  const void* outer = g_interrupted_frames_end;
  if (outer == nullptr) g_interrupted_frames_end = reinterpret_cast<const void*>(util::stack_pointer());
  static_cast<RubyRuntime*>(self)->run_queued_job();
  g_interrupted_frames_end = outer;
}

void RubyRuntime::run_queued_job() {
  std::function<Result<std::string>(const RubyApi&)> work;
  {
    std::lock_guard lock(mutex_);
    if (state_ != State::kQueued) return;  // a coalesced or late trigger: nothing asked
    state_ = State::kRunning;
    work = std::move(work_);
  }
  // Objects the job allocates belong to memprof, not to the Ruby code it interrupted (the gem's
  // extension, once loaded, says so to its tracker; run() looked it up).
  auto set_paused = set_thread_paused_;
  int was_paused = set_paused != nullptr ? set_paused(1) : 0;
  // On a Ruby thread, inside Ruby's frames: an exception from the work (out of memory in a
  // process at its ulimit -v) would reach them and abort the process.
  Result<std::string> result = std::string();
  bool out_of_memory = false;
  try {
    result = work(api_);
  } catch (const std::bad_alloc&) {
    out_of_memory = true;
  }
  if (set_paused != nullptr) set_paused(was_paused);
  if (out_of_memory) result = err("out of memory in the process");
  std::lock_guard lock(mutex_);
  result_ = std::move(result);
  state_ = State::kDone;
  done_.notify_all();
}

bool RubyRuntime::trigger() {
  VmInUse vm;  // the VM's end waits until the job is posted, or this sees that it has ended
  if (!vm.ok()) return false;
  if (api_.job_preregister != nullptr && api_.job_trigger != nullptr) {
    // Preregistering from this thread is safe on 3.3 and 3.4 (it takes no Ruby lock and reads
    // no execution context); it is done once, so the 32-entry table never fills.
    if (!handle_registered_) {
      handle_ = api_.job_preregister(0, &RubyRuntime::job_entry, this);
      handle_registered_ = handle_ != ~0U;
      if (!handle_registered_) return false;
    }
    api_.job_trigger(handle_);
    return true;
  }
  return api_.job_register_one(0, &RubyRuntime::job_entry, this) != 0;
}

namespace {

// Only signals Ruby handles itself are sent: SIGVTALRM's default action would end the process.
void send_if_handled(int signal) {
  struct sigaction current {};
  if (sigaction(signal, nullptr, &current) != 0) return;
  if (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN) return;
  syscall(SYS_tgkill, getpid(), getpid(), signal);
}

}  // namespace

void RubyRuntime::wake_main_thread(bool insist) const {
  // SIGVTALRM makes a blocking system call return EINTR, and Ruby then checks interrupts. From
  // Ruby 3.3 a thread in `sleep` or Queue#pop waits on a condition variable, which SIGVTALRM
  // does not end; a signal Ruby traps itself does: its handler has the timer thread interrupt
  // the main thread (the unblocking function), which then runs the job. SIGCHLD is the one whose
  // default, untrapped, does nothing; an app that traps it (unicorn's master) sees a spurious
  // SIGCHLD about once a second until the job runs, which reaping with WNOHANG ignores.
  send_if_handled(SIGVTALRM);
  if (insist) send_if_handled(SIGCHLD);
}

Result<std::string> RubyRuntime::run(std::function<Result<std::string>(const RubyApi&)> work,
                                     std::chrono::milliseconds timeout) {
  if (!vm_ready()) return err("Ruby has not started yet in this process");
  // A job posted to a VM that is gone (a process in exit(), after ruby_cleanup) crashes it:
  // callers hold a RubyVmEndWatch (watch_vm_end, or their session's).
  if (ruby_vm_ended()) return err(kVmEnded);
  {
    std::lock_guard lock(mutex_);
    if (state_ == State::kRunning || state_ == State::kQueued)
      return err("the previous request is still running in Ruby");
    state_ = State::kQueued;
    work_ = std::move(work);
    // Here, on the agent's thread, not in the job: a dlsym that fails leaves its error message
    // allocated on the calling thread (~100 bytes), which `memprof native` would count as the
    // app's. Ruby loads extensions RTLD_GLOBAL: the gem's is found once loaded.
    set_thread_paused_ = reinterpret_cast<int (*)(int)>(dlsym(RTLD_DEFAULT, "memprof_set_thread_paused"));
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mutex_);
  auto insist_after = std::chrono::steady_clock::now() + kInsistAfter;
  while (state_ != State::kDone) {
    if (state_ == State::kQueued) {
      if (ruby_vm_ended()) {  // the job will never run
        state_ = State::kIdle;
        work_ = nullptr;
        return err(kVmEnded);
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        state_ = State::kIdle;
        work_ = nullptr;
        return err("waiting for Ruby: the main thread is {} and has not let the agent run "
                   "for {} s; try again when it is busy or idle in Ruby code",
                   describe_main_thread(), timeout.count() / 1000.0);
      }
      lock.unlock();
      // Triggered again every round: before 3.3 the queue may be momentarily full; from 3.4 a
      // trigger flags the thread running at that moment, which may be one that has gone to
      // sleep since (or memprof's own Ruby thread of an earlier attach, ended since).
      trigger();
      bool insist = std::chrono::steady_clock::now() > insist_after;
      if (insist) insist_after += kInsistAfter * 3;
      wake_main_thread(insist);
      lock.lock();
    }
    done_.wait_for(lock, kWakeInterval);
  }
  state_ = State::kIdle;
  return std::move(result_);
}

Status RubyRuntime::watch_vm_end() { return RubyVmEndWatch::hold(vm_end_watch_); }

void RubyRuntime::reset_after_fork() {
  new (&mutex_) std::mutex;
  new (&done_) std::condition_variable;
  state_ = State::kIdle;
  work_ = nullptr;
}

std::string describe_main_thread() {
  auto syscall_line = read_proc_file(fmt::format("/proc/self/task/{}/syscall", getpid()));
  if (!syscall_line.ok()) return "in an unknown state";
  if (syscall_line->rfind("running", 0) == 0) return "running";
  long number = std::strtol(syscall_line->c_str(), nullptr, 10);
  if (number < 0) return "running";
  return fmt::format("in {}(2)", inject::syscall_name(number));
}

}  // namespace memprof::agent
