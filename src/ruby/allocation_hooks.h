// Hooks on Ruby's allocation entry points (GOT slots, or call sites in a static ruby), plus the
// BasicObject allocator swap.
//
// Debian's libruby calls its own exported allocation functions through its PLT, and C
// extensions call them through their GOT, so replacing those GOT slots sees allocations
// without Ruby's (slow-path) NEWOBJ event:
//   rb_wb_protected_newobj_of, rb_wb_unprotected_newobj_of, rb_ec_wb_protected_newobj_of,
//   rb_newobj_of                      most objects (strings, arrays, hashes, structs, ...)
//   rb_data_object_wrap/_zalloc, rb_data_typed_object_wrap/_zalloc       T_DATA
// T_OBJECT instances are made inside gc.c by rb_class_allocate_instance, which is not exported;
// it is reached through the allocator pointer that BasicObject's subclasses inherit, which the
// public rb_get_alloc_func/rb_define_alloc_func read and replace. Ruby copies a superclass's
// allocator into each new class, so many classes hold their own copy: install() replaces it
// in every class that holds it, and uninstall puts it back in every class that holds ours
// (including classes created while tracking). Some classes have an allocator of
// their own that calls rb_class_allocate_instance directly inside libruby (Exception's, in
// Ruby 3.1): a call-site hook redirects those `call rel32` sites (found by decoding libruby's
// code once per process) to the same recording allocator. Everything is undone when tracking
// stops: every patched byte gets its old value back.
//
// A ruby with libruby linked into the executable (ruby-build's default) has no PLT between its
// functions: there the same forwarders are reached through call-site hooks on every `call
// rel32` to an allocation function in the executable's code, and through GOT hooks in C
// extensions (loaded now or later).
//
// The replacements forward four integer registers to the original and record the returned
// object. Every hooked function takes at most four integer or pointer arguments in every
// Ruby version we support (their parameter lists changed between 3.1 and 3.3), and passing
// unused argument registers is harmless in the SysV ABI, so one forwarder fits all versions.
//
// Nested hooked calls (rb_data_typed_object_zalloc calls rb_data_typed_object_wrap through
// libruby's PLT) record the same address twice, which the table absorbs (same key, same site).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/hook/call_site_hook.h"
#include "core/hook/got_hook.h"
#include "core/util/result.h"
#include "ruby/ruby_headers.h"

namespace memprof::ruby {

class Tracker;

class AllocationHooks {
 public:
  // GOT hooks in every object; with the VM linked into the executable (no shared libruby),
  // also call-site hooks on the executable's own calls. Fails when nothing can be patched.
  static Result<std::unique_ptr<AllocationHooks>> install(Tracker& tracker);
  // The slow part of install -- finding the allocation functions and decoding the code that
  // calls them (~100 ms for a ruby executable) -- done once per process with the GVL released,
  // so that the app's threads run meanwhile (an attached server does not pause for it). On a
  // Ruby thread holding the GVL. Errors are left for install() to report.
  static void prepare_without_gvl();
  // Restores every patched slot and the allocator.
  ~AllocationHooks();
  AllocationHooks(const AllocationHooks&) = delete;
  AllocationHooks& operator=(const AllocationHooks&) = delete;

  size_t patched_slots() const;
  size_t patched_call_sites() const;

 private:
  using CallSites = std::map<const void*, std::vector<uintptr_t>>;

  AllocationHooks() = default;
  Status swap_allocators();
  static Result<const CallSites*> direct_call_sites();
  static void resolve_originals();
  Status redirect_direct_calls(const std::string& executable);
  Status hook_direct_instance_calls();
  void restore_allocators();

  std::vector<std::unique_ptr<hook::GotHook>> got_hooks_;
  std::vector<std::unique_ptr<hook::CallSiteHook>> call_site_hooks_;
  bool allocators_swapped_ = false;
};

// Where libruby's allocator lives, for the error message and the mechanism choice: the path
// of the object defining rb_wb_protected_newobj_of, or an error.
Result<std::string> libruby_path();

}  // namespace memprof::ruby
