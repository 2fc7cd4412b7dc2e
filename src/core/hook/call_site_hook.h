// Call-site hooks (the caller-side trampoline of the 2009 tool): every `call rel32` (and tail
// `jmp rel32`) to `target` inside one loaded object is redirected to a thunk near the object
// that jumps to `replacement`. Calls inside one object never touch the GOT; this is how they are
// seen without rewriting the callee. The object's executable segments are decoded with Zydis
// (a linear sweep, instruction by instruction), never scanned for 0xE8 bytes.
//
// Each site keeps its opcode; only its displacement changes, and only bytes that one aligned
// atomic store can cover (see patch.h), so threads running through a site always execute the
// old or the new call, never a mix. Most sites have their 4 displacement bytes inside one
// aligned 16-byte block and may point at any thunk. For the 3 in 16 whose displacement
// crosses a 16-byte boundary, a thunk is chosen so that only the bytes on one side change:
// congruent to the target modulo 2^8 or 2^16 (the low bytes stay), or inside the same 16 MiB
// window (the high byte stays). Never congruent modulo 2^24: measured here, a thunk whose low
// 24 bits equal the target's makes every call ~10x slower (branch predictor aliasing).
//
// How to add a hook:
//
//   static int counting_square(int x) { ++calls; return real_square(x); }
//   auto hook = memprof::hook::CallSiteHook::install((void*)&square, (void*)&counting_square,
//                                                    (void*)&some_function_in_same_object);
//   // the target itself is unchanged: original() == target
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/hook/loaded_object.h"
#include "core/util/result.h"

namespace memprof::hook {

struct CallSite {
  uintptr_t address;               // the call/jmp instruction
  bool tail_call;                  // `jmp rel32` rather than `call rel32`
  int32_t previous_displacement;   // restored on uninstall
  uintptr_t thunk;                 // where the site now goes
};

class CallSiteHook {
 public:
  // `object_address`: any address inside the object whose code is scanned (the target's own
  // object when null). Fails when no site calls `target` in that object.
  static Result<std::unique_ptr<CallSiteHook>> install(void* target, void* replacement,
                                                       const void* object_address = nullptr);
  // Only scans; patches nothing (for tools that report call sites).
  static Result<std::vector<uintptr_t>> find_sites(const void* target,
                                                   const void* object_address = nullptr);
  // The sites of several targets in one decoding pass over the object containing
  // `object_address`; a target no site calls maps to an empty list. Decoding a large object
  // takes tens of milliseconds: callers that hook and unhook often keep the result.
  static Result<std::map<const void*, std::vector<uintptr_t>>> find_sites(
      std::span<const void* const> targets, const void* object_address);
  // Redirects the given sites, found earlier by find_sites, after checking that each still is
  // a call or jmp rel32 to `target`. Fails when `sites` is empty.
  static Result<std::unique_ptr<CallSiteHook>> install_at(void* target, void* replacement,
                                                          std::span<const uintptr_t> sites);

  CallSiteHook(const CallSiteHook&) = delete;
  CallSiteHook& operator=(const CallSiteHook&) = delete;
  ~CallSiteHook();  // uninstalls: every displacement restored (unless the object was unloaded)

  void* original() const { return target_; }  // the callee is not modified
  const std::vector<CallSite>& sites() const { return sites_; }
  const std::string& object() const { return object_; }

 private:
  CallSiteHook() = default;
  void* target_ = nullptr;
  std::string object_;
  ObjectKey object_key_;
  std::vector<CallSite> sites_;
};

}  // namespace memprof::hook
