// Another process's paths and pid as this one must name them. A process in a mount namespace of
// its own (systemd's PrivateTmp, ProtectSystem; a container) has its own /tmp: a file it makes
// there is reached from here through /proc/PID/root. One in a pid namespace of its own knows
// itself by another pid (NSpid), which is what names its files.
#pragma once

#include <sys/types.h>

#include <string>

namespace memprof::proc {

// Whether process `pid` sees the same mounts as this one (true when that cannot be read: the
// common case, and errors then come from the paths themselves).
bool same_mount_namespace(pid_t pid);

// Where process `pid`'s "/" is from here: "" in the same mount namespace, else /proc/PID/root.
std::string root_of(pid_t pid);

// The absolute path `path`, as process `pid` names it, as this process reaches the same file.
std::string path_from_here(pid_t pid, const std::string& path);

// The pid process `pid` has in its own pid namespace (what its getpid() returns): the last
// number of NSpid in /proc/PID/status, or `pid` itself when there is none.
pid_t pid_inside(pid_t pid);
// The same for thread `tid` of process `pid` (what its gettid() returns).
pid_t tid_inside(pid_t pid, pid_t tid);

}  // namespace memprof::proc
