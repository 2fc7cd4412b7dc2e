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
// call sites are redirected (call_site_hook.h). Not seen: blocking regions Ruby enters by its
// internal macros (IO#wait_readable's poll, sleep, waiting for a child, Queue#pop): calls
// there keep "(without the GVL)".
#pragma once

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

class BlockingRegionLines {
 public:
  // Hooks what the process has of the five functions (a Ruby lacking one is no failure; none
  // at all, or no rb_ensure, is).
  static Result<std::unique_ptr<BlockingRegionLines>> install();
  ~BlockingRegionLines();  // every slot restored
  BlockingRegionLines(const BlockingRegionLines&) = delete;
  BlockingRegionLines& operator=(const BlockingRegionLines&) = delete;

 private:
  BlockingRegionLines() = default;
  Status redirect_direct_calls();
  std::vector<std::unique_ptr<hook::GotHook>> hooks_;
  std::vector<std::unique_ptr<hook::CallSiteHook>> call_site_hooks_;
};

// The calling thread's line when it entered the blocking region it is in, or false when no
// hooked entry recorded one. `path` is valid until the thread leaves the region.
bool blocking_region_location(const char** path, uint32_t* line) noexcept;

}  // namespace memprof::agent
