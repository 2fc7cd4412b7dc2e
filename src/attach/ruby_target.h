// What a target process is, as far as attaching goes: is it Ruby, with libruby shared or linked
// into its executable; has it an agent already. Read from /proc and the executable's ELF file,
// without stopping or touching the process.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "core/util/result.h"

namespace memprof::attach {

struct RubyTarget {
  // The mapped libruby shared library, or empty when libruby is linked into the executable.
  std::string libruby_path;
  bool is_static() const { return libruby_path.empty(); }
};

// The Ruby of `pid`, or "process N is not running Ruby ..." (checked before anything is
// injected: a Ruby command never loads the agent into a process it cannot serve).
Result<RubyTarget> find_ruby(pid_t pid);

// The agent library mapped into `pid` (loaded earlier and maybe detached since), if any.
std::optional<std::string> mapped_agent(pid_t pid);

}  // namespace memprof::attach
