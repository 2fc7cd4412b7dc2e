// Which program a process runs, and whether memprof's agent can be preloaded into it, from what
// the kernel gave that program at exec: its auxiliary vector and its initial environment.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "core/util/result.h"

namespace memprof::attach {

// Unknown (random_bytes 0) while an exec has not written the vector yet, or when it cannot be
// read.
struct ProgramIdentity {
  uint64_t random_bytes = 0;      // AT_RANDOM: an address on the program's new stack
  uint64_t interpreter_base = 0;  // AT_BASE: 0 for a statically linked program
  bool secure = false;            // AT_SECURE: it gained privileges (setuid, setgid, capabilities)
  bool known() const { return random_bytes != 0; }
  bool same_program(const ProgramIdentity& other) const { return random_bytes == other.random_bytes; }
};

// An exec writes the new vector entry by entry once the old program is gone; until it is written
// /proc/PID/auxv reads as zeros or a part. So a vector counts only once AT_RANDOM is in it (it
// comes after AT_BASE and AT_SECURE).
ProgramIdentity read_program(pid_t pid);

// Why the dynamic loader will not preload `agent_library` into the program `pid` runs (known),
// or ok when nothing says it will not: a static program has no loader, one that gained
// privileges ignores LD_PRELOAD, and one started with LD_PRELOAD cleared or rewritten never
// sees the agent. What cannot be read is no reason.
Status agent_preloadable(pid_t pid, const ProgramIdentity& program, const std::string& agent_library);

// Before a command is recorded (trace, native): refuses a statically linked executable
// (`program` as execvp finds it). Nothing would hold such a program at its start, and it ran or
// not, by timing, before memprof saw it was static. A script, or what a wrapper execs, is seen
// once it runs.
Status executable_preloadable(const std::string& program);

}  // namespace memprof::attach
