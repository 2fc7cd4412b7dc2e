// fork() while a session runs: a child has only the forking thread, so a stripe lock held by
// any other thread at that instant would stay locked in the child forever (its next malloc
// hashing to that stripe would spin for good: a forked puma or unicorn worker hung at boot).
// pthread_atfork handlers take every stripe lock before the fork and release them in both
// processes after it. The child keeps tracking into its copy of the tables (same session).
//
// While the locks are held, the forking thread's own allocator calls (other atfork handlers
// run after ours and may allocate) go straight to the originals, untracked.
#pragma once

namespace memprof::native {

// Registers the handlers once per process (they do nothing while no session runs).
void register_fork_guard() noexcept;

}  // namespace memprof::native
