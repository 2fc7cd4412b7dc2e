// Entry hooks (inline patches): the first instructions of a function become a 5-byte
// `jmp rel32` to a thunk near the function, which jumps to the replacement. The displaced
// instructions are relocated into a trampoline (RIP-relative operands re-targeted, rel8
// branches widened to rel32) followed by a jump back, so original() is a callable copy of the
// function's start.
//
// Use it when calls do not go through a GOT (static binaries, calls inside one object) and you
// want every caller, including indirect ones. How to add a hook:
//
//   static int (*real_compute)(int);
//   static int counting_compute(int x) { ++calls; return real_compute(x); }
//   auto hook = memprof::hook::EntryHook::install((void*)&compute, (void*)&counting_compute);
//   if (!hook.ok()) { report(hook.message()); return; }
//   real_compute = reinterpret_cast<int (*)(int)>((*hook)->original());
//
// Refused with an error (nothing written): the function is shorter than the jump, a branch in
// the function targets the displaced bytes, an instruction cannot be moved (jrcxz/loop,
// RIP-relative operand out of reach from the trampoline), another entry hook owns the address
// (the error names its owner),
// or the 5 bytes cannot be written with one atomic store while other threads run (see patch.h).
//
// Concurrency: the jump is written with one atomic store, so no thread executes a half-written
// jump. A thread that is suspended *between* two displaced instructions at the moment of the
// store would resume in the middle of the jump; that cannot happen when the first instruction
// is at least 5 bytes long (displaced_instructions() == 1 covers the whole jump) and is
// otherwise a narrow window. Set require_single_instruction to refuse hooks that have it, or
// park_threads to close it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/hook/loaded_object.h"
#include "core/util/result.h"

namespace memprof::hook {

struct EntryHookOptions {
  // Refuse unless the 5-byte jump lies inside the first instruction (no thread can be stopped
  // between displaced instructions while the jump is written).
  bool require_single_instruction = false;
  // Write the jump only while no other thread is stopped inside the bytes it replaces: an int3
  // on the first byte holds new callers meanwhile (entry_trap.h), running threads are parked
  // and threads blocked in the kernel are looked up (thread_parking.h); retried a few times,
  // then an error. Closes the window described above for functions whose jump spans several
  // instructions (glibc's malloc and free). Costs a signal per running thread; sleeping
  // threads get none. Installs a SIGTRAP handler that stays (other traps go where they went).
  bool park_threads = false;
  // Receives original() before the jump is written, so a replacement called by another thread
  // right away already finds it (a release store; read it with an acquire load or plainly).
  void** publish_original = nullptr;
  // Who holds the hook, named to a later install at the same address ("memprof native").
  const char* owner = "another entry hook";
};

// One function of a batch (install_many).
struct EntryHookRequest {
  void* target = nullptr;
  void* replacement = nullptr;
  void** publish_original = nullptr;  // as EntryHookOptions::publish_original
};

class EntryHook {
 public:
  static Result<std::unique_ptr<EntryHook>> install(void* target, void* replacement,
                                                    EntryHookOptions options = {});
  // Many hooks with the same options (publish_original aside), with one parking of the other
  // threads for all those that need it instead of one each: a trace of every function of libc
  // stops a busy process once, not a thousand times. One result per request, in order.
  static std::vector<Result<std::unique_ptr<EntryHook>>> install_many(std::span<const EntryHookRequest> requests,
                                                                      EntryHookOptions options);
  EntryHook(const EntryHook&) = delete;
  EntryHook& operator=(const EntryHook&) = delete;
  ~EntryHook();  // uninstalls: the original bytes come back (unless the object was unloaded);
                 // the trampoline stays valid
  // Uninstalls all of `hooks` (and empties it) with one protection change per page and one
  // serialization of the threads, instead of one each.
  static void uninstall_all(std::vector<std::unique_ptr<EntryHook>>& hooks);

  void* target() const { return target_; }
  const ObjectKey& object_key() const { return object_key_; }  // empty outside any object
  // Callable relocated prologue: behaves like the unhooked target. Stays callable after
  // uninstall (trampolines are never unmapped; a thread may still be inside one).
  void* original() const { return original_; }
  const std::vector<uint8_t>& saved_bytes() const { return saved_; }  // bytes the jump replaced
  size_t displaced_bytes() const { return displaced_bytes_; }
  size_t displaced_instructions() const { return displaced_instructions_; }

 private:
  struct Prepared;
  static Result<Prepared> prepare_locked(void* target, void* replacement, const EntryHookOptions& options);
  static std::unique_ptr<EntryHook> commit_locked(Prepared prepared, const char* owner);
  EntryHook() = default;
  void* target_ = nullptr;
  ObjectKey object_key_;  // the object holding target_, when it is inside one
  void* original_ = nullptr;
  std::vector<uint8_t> saved_;
  size_t displaced_bytes_ = 0;
  size_t displaced_instructions_ = 0;
  bool restored_ = false;  // by uninstall_all: the destructor has nothing left to do
};

}  // namespace memprof::hook
