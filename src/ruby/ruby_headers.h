// The Ruby C API as the bridge uses it. Include this instead of <ruby.h> directly.
//
// Besides the public headers, the bridge calls a few functions that libruby exports (they are
// in its dynamic symbol table, used by ext/objspace) but that no installed header declares for
// every version we support; they are declared here (weak where a version may lack it).
#pragma once

// Ruby's config.h #defines uint128_t and int128_t, which breaks fmt if fmt is parsed after it;
// fmt first, so every file that includes this header works whatever else it includes.
#include <fmt/format.h>

#include <ruby.h>
#include <ruby/debug.h>
#include <ruby/version.h>

extern "C" {
// vm.c: the file and line of the innermost Ruby frame in one frame walk (2.x .. 3.4).
__attribute__((weak)) const char* rb_source_location_cstr(int* pline);
// gc.c, exported for ext/objspace in every version we support (declared in internal/gc.h).
void rb_objspace_each_objects(int (*callback)(void* start, void* end, size_t stride, void* data),
                              void* data);
size_t rb_obj_memsize_of(VALUE object);
}

namespace memprof::ruby {

// The first members of rb_execution_context_t and rb_control_frame_t (vm_core.h), unchanged
// from Ruby 2.5 to 3.4. Only the frame's program counter and its flags word are used, to name
// an allocation's site by the program counter of the innermost Ruby frame and to do what gc.c
// does around its own NEWOBJ event (see Tracker::current_site_after_hook); where the running
// thread's context is, and how far apart its frames lie: execution_context.h.
struct ControlFrameHead {
  const VALUE* pc;
  VALUE* sp;
  const void* iseq;
  VALUE self;
  const VALUE* ep;  // ep[0]: frame flags (VM_ENV_DATA_INDEX_FLAGS)
};
struct ExecutionContextHead {
  VALUE* vm_stack;
  size_t vm_stack_size;
  ControlFrameHead* cfp;
};
constexpr VALUE kFrameFlagCFrame = 0x0080;  // VM_FRAME_FLAG_CFRAME
// Whether a word is a frame's flags (ep[0]): its VM_FRAME_MAGIC_* bits hold one of the frame
// types (METHOD .. DUMMY), unchanged from 2.5 to 3.4. Used to check a frame layout, not per
// allocation.
inline bool is_frame_flags(VALUE flags) {
  constexpr VALUE kMagicMask = 0x7fff0001;
  constexpr VALUE kMagics[] = {0x11110001, 0x22220001, 0x33330001, 0x44440001, 0x55550001,
                               0x66660001, 0x77770001, 0x78880001, 0x79990001};
  for (VALUE magic : kMagics)
    if ((flags & kMagicMask) == magic) return true;
  return false;
}

// The builtin type of a heap object, read straight from its flags word (RB_BUILTIN_TYPE
// asserts on special constants in debug builds of Ruby; callers here never pass one).
inline int slot_type(uintptr_t address) {
  return static_cast<int>(reinterpret_cast<const struct RBasic*>(address)->flags & RUBY_T_MASK);
}

}  // namespace memprof::ruby
