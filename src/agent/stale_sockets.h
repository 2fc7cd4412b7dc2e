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
size_t remove_stale_sockets(const std::string& directory);

}  // namespace memprof::agent
