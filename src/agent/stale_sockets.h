// Removing agent sockets nobody listens on. An agent removes its socket when it stops, but not
// when its process ends by _exit or a signal, or replaces its program (exec): those files stay
// in /tmp/memprof-UID (3,500 of them after a day of tests here), and `memprof ps` probed each.
#pragma once

#include <cstddef>
#include <string>

namespace memprof::agent {

// Removes each *.sock in `directory` that refuses a connection (no process listens there, in
// any pid namespace) and is older than a minute (a new agent may be between bind and listen).
// Returns how many were removed; a directory that cannot be read removes nothing.
// Also removes each *.follow (a follow marker, protocol.h) older than a minute whose CLI has
// ended: a CLI killed by SIGKILL leaves its marker behind.
size_t remove_stale_sockets(const std::string& directory);

// remove_stale_sockets, unless one ran in the last minute (the mtime of `directory`/.swept says
// when): every agent start swept, and each child of a forking server (resque forks one per job)
// read the whole directory -- thousands of entries, all too young to remove -- at its fork.
size_t sweep_stale_sockets(const std::string& directory);

// Whether the follow marker at `path` names a process that is alive (the CLI following).
bool follow_marker_names_live_cli(const std::string& path);

}  // namespace memprof::agent
