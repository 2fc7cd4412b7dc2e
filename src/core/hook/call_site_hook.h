// Call-site hooks (the caller-side trampoline of the 2009 tool): every `call rel32` (and tail
// `jmp rel32`) to `target` inside one loaded object is redirected to a thunk near the object
// that jumps to `replacement`. Calls inside one object never touch the GOT; this is how they are
// seen without rewriting the callee. The object's executable segments are decoded with Zydis
// (a linear sweep, instruction by instruction), never scanned for 0xE8 bytes.
//
// Each site is rewritten by changing one byte: the thunk is placed at an address congruent to
// `target` modulo 16 MiB, so the new displacement differs from the old one only in its most
// significant byte. A one-byte store is atomic whatever the alignment, so threads running
// through a site always see the old or the new call, never a mix.
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
#include <memory>
#include <string>
#include <vector>

#include "core/util/result.h"

namespace memprof::hook {

struct CallSite {
  uintptr_t address;  // the call/jmp instruction
  bool tail_call;     // `jmp rel32` rather than `call rel32`
  uint8_t previous_byte;  // the displacement's high byte before patching
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

  CallSiteHook(const CallSiteHook&) = delete;
  CallSiteHook& operator=(const CallSiteHook&) = delete;
  ~CallSiteHook();  // uninstalls: every displacement byte restored

  void* original() const { return target_; }  // the callee is not modified
  const std::vector<CallSite>& sites() const { return sites_; }
  const std::string& object() const { return object_; }
  void* thunk() const { return thunk_; }

 private:
  CallSiteHook() = default;
  void* target_ = nullptr;
  void* thunk_ = nullptr;
  std::string object_;
  std::vector<CallSite> sites_;
};

}  // namespace memprof::hook
