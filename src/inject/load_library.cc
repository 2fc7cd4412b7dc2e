// load_library: preflight, find dlopen, choose a safe thread and moment, call, put back, detach.
#include <dlfcn.h>

#include <cstring>
#include <filesystem>

#include "core/proc/loaded_objects.h"
#include "core/proc/remote_memory.h"
#include "inject/deferred_termination.h"
#include "inject/hijacked_thread.h"
#include "inject/inject.h"
#include "inject/preflight.h"
#include "inject/ptrace_session.h"
#include "inject/safe_point.h"
#include "inject/target_libc.h"

namespace memprof::inject {

namespace {

using Clock = std::chrono::steady_clock;

// dlopen's path is resolved in the target, whose working directory is not ours.
std::string absolute_library_path(const std::string& path) {
  if (path.empty() || path.front() == '/' || path.find('/') == std::string::npos) {
    return path;  // absolute, or a bare name for the target's library search path
  }
  std::error_code error;
  auto absolute = std::filesystem::absolute(path, error);
  return error ? path : absolute.string();
}

// dlerror()'s text in the target after a failed dlopen, or a stand-in when there is none.
std::string remote_dlerror(HijackedThread& thread, const TargetLibc& libc, pid_t pid,
                           std::chrono::milliseconds timeout) {
  if (libc.dlerror == 0) return fmt::format("{} returned NULL (no dlerror in this C library)",
                                            libc.dlopen_name);
  auto message = thread.call(libc.dlerror, {}, "dlerror", timeout);
  if (!message) return fmt::format("{} returned NULL ({})", libc.dlopen_name, message.message());
  if (*message == 0) return fmt::format("{} returned NULL and dlerror() nothing", libc.dlopen_name);
  auto text = proc::RemoteMemory(pid).read_cstring(*message);
  return text ? *text : fmt::format("{} returned NULL ({})", libc.dlopen_name, text.message());
}

// Calls `name`() of the library `handle`; empty on success (the function returned 0), else
// why not.
std::string call_exported(HijackedThread& thread, const TargetLibc& libc, uint64_t handle,
                          const std::string& name, pid_t pid, std::chrono::milliseconds timeout) {
  if (libc.dlsym == 0) return fmt::format("process {}: its C library has no dlsym", pid);
  auto address = thread.call(libc.dlsym, {handle, name}, "dlsym", timeout);
  if (!address) return address.message();
  if (*address == 0) return fmt::format("process {}: the loaded library has no {}", pid, name);
  auto result = thread.call(*address, {}, name, timeout);
  if (!result) return result.message();
  if (static_cast<int>(*result) != 0)
    return fmt::format("process {}: {}() failed: {}", pid, name,
                       std::strerror(static_cast<int>(*result)));
  return {};
}

}  // namespace

Result<InjectResult> load_library(pid_t pid, const std::string& library_path,
                                  const InjectOptions& options) {
  const std::string path = absolute_library_path(library_path);
  MEMPROF_TRY_STATUS(check_process_can_be_traced(pid));
  MEMPROF_TRY_STATUS(check_address_space_room(pid));
  MEMPROF_TRY(objects, proc::process_objects(pid));
  MEMPROF_TRY(libc, find_target_libc(pid, objects.objects));

  PtraceSession session(pid);
  MEMPROF_TRY(safe_point, find_safe_point(session, libc, options.safe_point_timeout));
  // From here the target thread may run with borrowed registers: no dying halfway by Ctrl-C.
  DeferredTermination deferred_termination;
  // Room for the path and the name of then_call, each with its NUL.
  const uint64_t string_capacity = path.size() + 1 + options.then_call.size() + 1;
  MEMPROF_TRY(thread, HijackedThread::take(session, safe_point.thread, safe_point.regs, libc,
                                           string_capacity));

  const std::string what = fmt::format("{}(\"{}\")", libc.dlopen_name, path);
  auto handle = thread.call(libc.dlopen, {path, uint64_t{RTLD_NOW} | libc.dlopen_extra_flags},
                            what, options.call_timeout);
  std::string failure;
  if (!handle) {
    failure = handle.message();
  } else if (*handle == 0) {
    failure = fmt::format("{} failed in process {}: {}{}", what, pid,
                          remote_dlerror(thread, libc, pid, options.call_timeout),
                          seccomp_hint(pid));
  } else if (!options.then_call.empty()) {
    failure = call_exported(thread, libc, *handle, options.then_call, pid, options.call_timeout);
  }
  Status finished = thread.finish();
  auto pause = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() -
                                                                     safe_point.stopped_at);
  if (!failure.empty()) return Error{failure};
  if (!finished) {
    return err("process {}: dlopen succeeded but thread {} could not be put back: {}", pid,
               safe_point.thread, finished.message());
  }
  return InjectResult{*handle, safe_point.thread, pause};
}

}  // namespace memprof::inject
