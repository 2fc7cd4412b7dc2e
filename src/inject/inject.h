// Loading a shared library into a running process (the injector of `memprof attach`).
//
// load_library stops one thread of the target with ptrace at a moment when it holds neither
// glibc's malloc lock nor the dynamic loader's lock, makes it call dlopen(path, RTLD_NOW), then
// puts back every register (general, FP/vector) and every stack byte it wrote, and lets it go.
// The other threads keep running the whole time.
//
// Every call the target thread makes for the injector returns through rt_sigreturn on a kernel
// signal frame that describes the thread as it was stopped (hijacked_thread.h): if memprof is
// killed meanwhile, even by SIGKILL, the kernel detaches the thread, the call completes and the
// thread puts itself back. SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGTSTP are held back while the
// thread is borrowed, so that memprof restores it itself. No PTRACE_O_EXITKILL.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "core/util/result.h"

namespace memprof::inject {

struct InjectOptions {
  // How long to look for a thread and moment where calling dlopen cannot deadlock.
  std::chrono::milliseconds safe_point_timeout{2000};
  // How long dlopen itself (with the library's constructors) may run.
  std::chrono::milliseconds call_timeout{20000};
  // A function of the library to call, with no argument, after dlopen returns: a library loaded
  // before (dlopen does not run its constructors again) can be restarted this way. Its int
  // result must be 0.
  std::string then_call;
};

struct InjectResult {
  uint64_t handle = 0;                 // dlopen's return value in the target
  pid_t thread = 0;                    // the thread that ran dlopen
  std::chrono::microseconds pause{0};  // how long that thread was held (stopped or running dlopen)
};

// Loads the shared library at `library_path` into process `pid` by running dlopen(path, RTLD_NOW)
// on one of its threads. The path must be readable by the target's uid (see make_readable_for);
// a relative path is made absolute here, since the target's working directory differs.
Result<InjectResult> load_library(pid_t pid, const std::string& library_path,
                                  const InjectOptions& options = {});

// Checks made before attaching, each failing with one actionable sentence: no such process,
// a thread id instead of a process id, zombie, stopped (SIGSTOP), already traced (naming the
// tracer), permissions (other uid, Yama ptrace_scope), statically linked (no libc.so to dlopen
// with).
Status check_can_inject(pid_t pid);

// When the target (as its filesystem uid and groups, in its mount namespace) cannot read `path`,
// copies it to a private file it can: mode 0500 in a 0700 directory owned by the target's uid,
// under the target's /tmp. Returns the path as the target sees it; otherwise returns `path`.
Result<std::string> make_readable_for(pid_t pid, const std::string& path);

// Removes a copy made by make_readable_for (and its directory) once the library is loaded: the
// target's mapping keeps the file's contents. Does nothing for a path it did not make.
Status remove_private_copy(pid_t pid, const std::string& path);

}  // namespace memprof::inject
