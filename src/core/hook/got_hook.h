// GOT hooks: replace a function in the global offset table of every selected loaded object.
//
// Calls between shared objects (and -fno-plt calls) go through GOT slots that the dynamic loader
// fills: R_X86_64_JUMP_SLOT slots (PLT calls) and R_X86_64_GLOB_DAT slots (-fno-plt calls and
// address-taken functions). A GotHook stores `replacement` into every such slot for one symbol,
// with an aligned 8-byte atomic store, so other threads see either the old or the new pointer.
// RELRO pages (BIND_NOW libraries such as Debian's libruby) are made writable only for the store
// and get their protection, read from /proc/self/maps, back right after (see patch.h).
//
// How to add a hook:
//
//   static void* (*real_malloc)(size_t);            // or use TypedGotHook (typed_hook.h)
//   static void* counting_malloc(size_t n) {         // noexcept in spirit: never throw,
//     ++calls;                                       // never allocate through the hooked path
//     return real_malloc(n);
//   }
//   // publish_original sets real_malloc before the first slot is written: calls can reach the
//   // replacement from other threads before install() returns.
//   auto hook = memprof::hook::GotHook::install(
//       "malloc", (void*)&counting_malloc, {.publish_original = (void**)&real_malloc});
//   if (!hook.ok()) { report(hook.message()); return; }
//   ...
//   hook->reset();  // uninstall: every slot gets its exact previous bytes back
//
// The replacement runs in whatever thread called the function, possibly inside a signal handler
// or while the loader lock is held: it must not take locks that the hooked code may hold.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"

namespace memprof::hook {

struct GotHookOptions {
  // Which loaded objects get patched; empty = every object except the hooking library itself
  // (the object containing memprof_hook's code), the dynamic loader and the vdso. A filter
  // replaces the first rule only: it may select the hooking library's own object (tests that
  // embed the library in the hooked program do), but the loader and the vdso are never patched.
  // The path is the loader's name for the object; for the main program, /proc/self/exe resolved.
  std::function<bool(std::string_view object_path)> object_filter;
  bool follow_dlopen = true;  // patch objects loaded later, before dlopen returns
  // Succeed even when no loaded object has a slot yet (with follow_dlopen: objects loaded later
  // may import the symbol; a ruby with libruby linked in gets its C extensions that way).
  bool allow_no_slots = false;
  // Receives original() before the first slot is written, so a replacement called by another
  // thread right away already finds it (a release store).
  void** publish_original = nullptr;
};

// One patched GOT slot, as installed.
struct GotSlot {
  void** address;        // the slot itself
  void* previous;        // what it held before (restored on uninstall)
  std::string object;    // path of the object the slot belongs to
  bool jump_slot;        // R_X86_64_JUMP_SLOT (PLT) rather than R_X86_64_GLOB_DAT
};

class GotHook {
 public:
  // Replaces `symbol` in the GOT of every selected object (JUMP_SLOT and GLOB_DAT).
  // `symbol` is a plain name ("malloc": every version) or "name@VERSION" (only slots bound to
  // that symbol version, e.g. "fixture_versioned@VERS_1"). Fails when no selected object has a
  // slot for it ("no GOT slot for symbol 'xyz' in any loaded object"), when no loaded object
  // defines it, or when another GotHook already hooks the same symbol.
  static Result<std::unique_ptr<GotHook>> install(std::string symbol, void* replacement,
                                                  GotHookOptions options = {});

  // The address the loader would bind `symbol` to: the first definition in load order (the
  // global scope), with GNU indirect functions resolved. Never a PLT stub.
  static Result<void*> find_original(std::string_view symbol);

  GotHook(const GotHook&) = delete;
  GotHook& operator=(const GotHook&) = delete;
  ~GotHook();              // uninstalls: exact bytes and page protections restored

  void* original() const;  // the real function (resolved, never a PLT stub); call it from the hook
  void* replacement() const;
  const std::string& symbol() const;
  size_t patched_slots() const;
  std::vector<GotSlot> slots() const;  // a snapshot (slots of dlopen'ed objects get added)
  // Objects loaded later that could not be patched (the process went on without the hook there).
  std::vector<std::string> follow_errors() const;

  struct State;  // shared with the dlopen follower (got_hook_registry.cc)

 private:
  explicit GotHook(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace memprof::hook
