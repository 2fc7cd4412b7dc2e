// Where the pieces that go into a target live, relative to the memprof executable, in both
// layouts: the build tree (build/memprof, build/libmemprof_agent.so, build/ruby/memprof/ and
// build/rubies/NAME/memprof/ for the extensions, the checkout's lib/) and the installed gem
// (libexec/memprof, libexec/libmemprof_agent.so, lib/ and lib/memprof/memprof.so).
#pragma once

#include <string>
#include <vector>

#include "attach/ruby_target.h"
#include "core/util/result.h"

namespace memprof::attach {

// libmemprof_agent.so next to the executable (MEMPROF_AGENT overrides).
Result<std::string> agent_library();
// lib/memprof.rb, the gem's entry file.
Result<std::string> gem_entry_file();

// A memprof extension, built for one Ruby.
struct Extension {
  std::string path;
  std::string ruby_abi;  // "3.3": the memprof_ruby_abi string the extension exports
  std::string libruby;   // the libruby it links (DT_NEEDED), empty when built for a static Ruby
};

// Every extension found (MEMPROF_EXTENSIONS, a ':'-separated list of files, comes first).
std::vector<Extension> installed_extensions();

// The extension to load into a process running Ruby `ruby_version` ("3.3.8"), shared or static:
// one built for the same major.minor, linked against the same libruby, or built for a static
// Ruby (it links no libruby; the process's own provides the symbols). The error lists what
// there is and how to get the missing one.
Result<Extension> choose_extension(pid_t pid, const std::string& ruby_version,
                                   const RubyTarget& target,
                                   const std::vector<Extension>& extensions);

}  // namespace memprof::attach
