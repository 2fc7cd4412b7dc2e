// Getting from a PID to a tracking agent: check the process is Ruby, inject the agent unless it
// is there (or restart it if it was detached), load the memprof gem built for that Ruby, start
// tracking. Every step is idempotent, so `memprof attach` twice is harmless. `memprof dump`
// stops before the last: a heap dump needs the gem's code, not its tracking.
#pragma once

#include <sys/types.h>

#include <string>

#include "core/util/result.h"

namespace memprof::attach {

struct AttachOutcome {
  bool injected = false;      // the agent was loaded by this call
  bool loaded = false;        // the gem was loaded by this call
  bool started = false;       // tracking was started by this call (false: it was on already)
  std::string status_json;    // Memprof::Agent's status reply
  double pause_ms = 0;        // how long the injector held a thread of the target
};

// Makes sure `pid` runs an agent that answers (injecting it if needed).
Result<AttachOutcome> ensure_agent(pid_t pid);

// ensure_agent, then the gem loaded (tracking as it was: off in a process never attached).
Result<AttachOutcome> load_memprof(pid_t pid);

// load_memprof, then tracking on.
Result<AttachOutcome> attach_ruby(pid_t pid);

}  // namespace memprof::attach
