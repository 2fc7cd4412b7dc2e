// The Ruby line a thread was at when it let go of the GVL, for the calls it makes without it.
//
// ruby_caller.h reads a thread's Ruby line only while it holds the GVL: without it a GC on
// another thread may move the frames. But the library calls worth timing are made without it:
// a C extension's query (pg, mysql2 release the GVL around the server's round trip), zlib's
// deflate, Ruby's own reads and writes. They showed "(without the GVL)". While installed, the
// functions a thread enters a blocking region through are hooked in every object's GOT
// (rb_nogvl, rb_thread_call_without_gvl and ...2, rb_thread_io_blocking_region and
// rb_thread_io_blocking_call): the replacement, still holding the GVL, copies the caller's file
// and line into the thread's record, calls the real function under rb_ensure (a Ruby exception
// raised out of the region unwinds with longjmp past any plain clean-up, and a stale line
// would be a wrong answer), and puts the record back as it was. A region entered inside
// another (through rb_thread_call_with_gvl) has its own line until it ends.
//
// A ruby with libruby linked in calls them inside its own code with no GOT between: there the
// call sites are redirected (call_site_hook.h).
//
// Ruby also lets go of the GVL where no such function is called: in the blocking regions it
// enters by its internal macros (IO#wait_readable's poll, waiting for a child) and in its thread
// scheduler (sleep, Queue#pop, Mutex#lock, Thread#join, a thread switch at the end of a time
// slice, waiting for the GVL that another thread holds). In the scheduler's waits
// ruby_thread_has_gvl_p says yes (it looks for a blocking region only): the thread's frames were
// read there while another thread ran, and a call made while another thread collected was
// charged to "(garbage collection)". From Ruby 3.3 on, Ruby's thread event hooks say when a
// thread lets go of the GVL (SUSPENDED) and takes it back (RESUMED), and Ruby fires SUSPENDED
// before it hands the GVL over (thread_pthread.c of 3.3 and 3.4): the line is read then and
// kept for the thread's calls until RESUMED (follow_scheduler). On Ruby 3.1 calls in those
// waits keep "(without the GVL)", or are read as before in the scheduler's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/util/result.h"

namespace memprof::hook {
class CallSiteHook;
class GotHook;
}

namespace memprof::agent {

struct RubyApi;

class BlockingRegionLines {
 public:
  // Hooks what the process has of the five functions (a Ruby lacking one is no failure; none
  // at all, or no rb_ensure, is).
  static Result<std::unique_ptr<BlockingRegionLines>> install();
  ~BlockingRegionLines();  // the scheduler no longer followed, every slot restored
  BlockingRegionLines(const BlockingRegionLines&) = delete;
  BlockingRegionLines& operator=(const BlockingRegionLines&) = delete;

  // Follows the GVL through Ruby's thread scheduler too, on Ruby 3.3 and 3.4 once the VM is up
  // (a launched Ruby boots after the session starts: called again at each read, it does it
  // then). Tried once; other Rubies are left as they are.
  void follow_scheduler(const RubyApi& api);

 private:
  BlockingRegionLines() = default;
  Status redirect_direct_calls();
  std::vector<std::unique_ptr<hook::GotHook>> hooks_;
  std::vector<std::unique_ptr<hook::CallSiteHook>> call_site_hooks_;
  void* scheduler_hook_ = nullptr;  // Ruby's rb_internal_thread_event_hook_t
  pid_t scheduler_hook_process_ = 0;  // which process added it (a forked child inherits it)
  bool scheduler_tried_ = false;
};

// Whether the calling thread let go of the GVL in Ruby's scheduler and has not taken it back
// (known while the scheduler is followed, and from the thread's first wait since).
bool in_scheduler_wait() noexcept;

// The calling thread's line when it entered the blocking region it is in or let go of the GVL
// in the scheduler, or false when nothing recorded one. `path` is valid until the thread leaves
// the region or takes the GVL back.
bool blocking_region_location(const char** path, uint32_t* line) noexcept;

}  // namespace memprof::agent
