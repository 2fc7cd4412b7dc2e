// The objects Memprof.dump_all makes itself, so that its dump can mark them ("memprof_own":true)
// and `memprof diff` can leave them out: a diff of two dumps taken with nothing in between
// listed ~20 objects and 9.5 kB as allocated between them (the File the second dump was written
// through and its mutex, the scratch paths, the call caches the dump's own code filled on its
// first run, after the first dump was written).
//
// From begin() to end() (one Memprof.dump_all call) the NEWOBJ event records the objects the
// calling thread makes; an object another thread makes (they run during the dump's writes) in
// the slot of one of those, freed meanwhile, is theirs. Those the dump holds are its own. Those
// it does not hold (made after it was written, or in a slot it had already passed) and that
// are still alive when the call returns are carried to the later dumps, which hold them too:
// the VM's caches (IMEMOs: call and constant caches, method entries), which live as long as
// memprof's code, and objects a stale word of the machine stack keeps alive for a while (seen on
// Ruby 3.3: the Mutex of the File a dump was written through). Nothing watches them between
// two calls, so a carried object is one of a later dump's own only while its slot still holds
// it: an IMEMO of the same kind (memprof's caches are freed only if the methods they cache are
// redefined), or the object with the same object_id (given to it when carried; ids are never
// reused, and another object in its slot has none until someone asks for it). A GC.compact
// makes it forget all it recorded (memprof's Compaction window); automatic compaction, which has
// no window, is held off during a dump, but between two calls it may move an IMEMO of the app
// into a carried IMEMO's slot.
//
// The same window pauses the tracker on the calling thread, as inside every call into the
// extension: what the dump makes is kept at memprof's internal site, so Memprof.stats after a
// dump does not list the File's mutex (objspace.rb) that a stale stack word keeps a while.
//
// The event slows allocation down for as long as it is on (internal_events.h): the length of a
// dump_all call.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_set>
#include <vector>

#include "core/track/heap_ranges.h"
#include "ruby/internal_events.h"
#include "ruby/ruby_headers.h"

namespace memprof::ruby {

class DumpOwnObjects {
 public:
  // Process-wide, never destroyed (its event hook is a Ruby object).
  static DumpOwnObjects& instance();

  // A dump_all call starts: from here, the calling thread's new objects are the dump's own.
  // Calls nest (a trap handler's dump_all inside another): only the outermost begins and ends.
  void begin();
  // The dump has been written; its lines are about to be read: fixes the set own() answers from.
  void dump_written();
  // Whether the object at `address` in the dump is the dump's own.
  bool own(uintptr_t address);
  // The dump_all call returns: stops recording; carries the objects the dump did not hold.
  void end();
  // Like end(), for a window opened only to be inherited: the attach agent opens one before it
  // forks the child that writes a dump (so that what the child makes before its dump_all, the
  // request and the evaluated handler, is the dump's own), and the parent abandons its side,
  // carrying nothing.
  void abandon();
  // GC.compact moved objects: the recorded slots may hold others now. Forgets them (a dump
  // written after it marks only what the call makes from here).
  void compacted();
  // A dump_all call is in progress (a fork now makes the dump's child: it keeps the table).
  bool window_open() const { return depth_ > 0; }

 private:
  DumpOwnObjects() = default;
  static void on_new_object(VALUE object, void* self);

  // An object carried to later dumps: its address, what its flags said it was (type, and IMEMO
  // kind), and its object_id (Qnil for an IMEMO, which has none), to tell it from another
  // object in its slot.
  struct Carried {
    uintptr_t address;
    VALUE kind;
    VALUE object_id;
  };
  static VALUE kind_of(uintptr_t address);
  // Ends the outermost window (false inside a nested one): recording stops, the pause goes.
  bool close_window();
  // Carries what the call made, still alive, that the dump did not hold.
  void carry_survivors();
  void forget();
  static bool still_there(const Carried& object, const track::HeapRanges& ranges);

  std::unique_ptr<InternalEventHook> newobj_;  // made by the first begin()
  int depth_ = 0;         // dump_all calls in progress
  bool was_paused_ = false;  // the tracker's pause on thread_ before the outermost begin()
  VALUE thread_ = Qnil;   // the thread in dump_all (a Thread object: always marked)
  std::unordered_set<uintptr_t> made_;  // slots of objects thread_ made since begin() (some freed since)
  std::vector<Carried> carried_;
  std::vector<uintptr_t> own_;   // sorted: made_ and the carried objects still in place
  std::vector<bool> in_dump_;    // per own_ entry: the dump held it
};

}  // namespace memprof::ruby
