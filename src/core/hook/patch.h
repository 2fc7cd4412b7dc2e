// The one function that writes into live code and data of this process (GOT slots, call-site
// displacements, function entries). Every hook kind goes through it.
//
// How a patch is made safe for other threads that keep running:
//   1. Only the bytes that change are written, with one store of the smallest naturally aligned
//      unit that covers them: 1, 2, 4 or 8 bytes (`mov`) or 16 bytes (`lock cmpxchg16b`).
//      Aligned stores of these sizes are single-copy atomic on x86-64, so a concurrent
//      instruction fetch or load sees all old or all new bytes, and neighbouring bytes are not
//      rewritten (the loader may be filling the next GOT slot). A change that fits no aligned
//      16-byte block is refused while other threads exist; in a single-threaded process it is
//      copied with all signals blocked (no one else can observe it).
//   2. Pages: the protection of each touched page is read from /proc/self/maps (not assumed),
//      PROT_WRITE is added for the store only, and the recorded protection is put back; every
//      mprotect result is checked. Executable pages are briefly W+X because other threads may be
//      executing code on them; none is left that way, not even in a child forked meanwhile
//      (restore_patch_protections_in_child).
//   3. Serialization: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) makes every thread
//      of the process execute a core-serializing instruction before the patch returns, as the
//      Intel SDM asks for cross-modifying code (falls back to local cpuid where unsupported).
// A process-wide mutex orders concurrent patchers so protections are never restored under each
// other's feet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/util/result.h"

namespace memprof::hook {

// Writes `bytes` at `address`. Errors leave memory unchanged (except when restoring a page
// protection fails after the store, which is reported).
Status patch_memory(void* address, std::span<const uint8_t> bytes);

// For patches that other threads must not see half-done in a way an atomic store cannot
// prevent (an entry hook's jump over several instructions): called once the pages are writable
// and everything that allocates is done, right before the store, and right after it. When
// before_store() says no, nothing is written and patch_memory fails with *busy set (try again).
// Neither may allocate: other threads may be held while they run (thread_parking.h).
class StoreGate {
 public:
  virtual bool before_store() noexcept = 0;
  virtual void after_store() noexcept = 0;

 protected:
  ~StoreGate() = default;
};
Status patch_memory(void* address, std::span<const uint8_t> bytes, StoreGate& gate, bool* busy);

// Several small patches at once (the call sites of one function: hundreds in a ruby
// executable), with the same guarantees per patch and one read of the maps, one protection
// change per page and one serialization for all. Each patch is at most 16 bytes. On an error
// the patches before the failing one stay written: `written` says how many.
struct SmallPatch {
  uintptr_t address;
  uint8_t bytes[16];
  uint8_t size;
};
Status patch_memory(std::span<const SmallPatch> patches, size_t* written = nullptr);

// The same under one StoreGate (above): all the patches go in at one store moment, or none
// (*busy set when before_store() says no). Each must fit one aligned 16-byte unit
// (fits_one_atomic_store); other threads run, so there is no copy fallback.
Status patch_memory(std::span<const SmallPatch> patches, StoreGate& gate, bool* busy);

// Whether [address, address + size) lies within one aligned 16-byte block: one atomic store
// can write it whatever its neighbours.
bool fits_one_atomic_store(uintptr_t address, size_t size);

// In a forked child: puts back the protection of every page a patch had made writable at the
// fork (the parent puts back its own; the child, with no patcher thread, never would: it kept
// code pages writable and executable for good). With raw system calls, no lock, no allocation;
// run by settle_hooks_after_fork (hook_change.h).
void restore_patch_protections_in_child() noexcept;

// Protection (PROT_* bits) of the page holding `address`, from /proc/self/maps.
Result<int> page_protection(const void* address);

// Number of threads in this process (/proc/self/task).
Result<size_t> thread_count();

}  // namespace memprof::hook
