// The in-memory model of one ObjectSpace.dump_all file: every object as a dense id with its fields
// in parallel arrays (struct of arrays, ~40 bytes per object plus 4 per reference), the ROOT lines,
// a summary of the SHAPE lines and the lines that could not be read.
//
// Ids: objects are numbered 0..size()-1 in the order their lines appear in the dump. Ruby writes
// the dump page by page, slot by slot, so ids in one page are consecutive and ascending by
// address; consumers that draw pages (heapmap) may rely on addresses, not on ids.
//
// Strings (class names, file paths, detail strings) live once in `strings` and are referenced by
// StringId; id 0 is the empty string, which also means "absent".
//
// Produced by load_heap() (loader.h); read-only afterwards. Graph algorithms (graph.h,
// dominators.h) work on it without copying it.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/util/huge_page_allocator.h"
#include "heap/address_index.h"
#include "heap/object_id.h"
#include "heap/object_type.h"
#include "heap/string_pool.h"

namespace memprof::heap {

inline constexpr uint32_t kNoGeneration = std::numeric_limits<uint32_t>::max();

// Bits of Heap::flags. The GC flags come from the line's "flags" object; the others from the
// top-level boolean fields of the same name.
enum ObjectFlag : uint16_t {
  kFlagWbProtected = 1u << 0,   // "wb_protected": the object is covered by the write barrier.
  kFlagOld = 1u << 1,           // "old": promoted to the old generation (survived 3 GCs).
  kFlagUncollectible = 1u << 2, // "uncollectible": will not be freed by the current GC cycle.
  kFlagMarked = 1u << 3,        // "marked": marked by the last (possibly still running) GC.
  kFlagMarking = 1u << 4,       // "marking": incremental marking in progress on this object.
  kFlagPinned = 1u << 5,        // "pinned": GC.compact may not move it (pinned by C code, ...).
  kFlagFrozen = 1u << 6,        // "frozen": true
  kFlagEmbedded = 1u << 7,      // "embedded": contents stored inside the slot itself.
  kFlagShared = 1u << 8,        // "shared": shares its buffer with another String/Array.
  kFlagFstring = 1u << 9,       // "fstring": interned frozen string (deduplicated literal).
  kFlagSingleton = 1u << 10,    // "singleton": a singleton class (CLASS lines).
  kFlagChilled = 1u << 11,      // "chilled" (Ruby 3.4+): a string literal that warns when
                                // mutated and will be frozen in a later Ruby.
  kFlagMemprofOwn = 1u << 12,   // "memprof_own" (written by Memprof.dump_all): an object the
                                // dump's writer made itself (its File, its paths, ...).
};

// A ROOT line: {"type":"ROOT", "root":"vm", "references":[...]}. Ruby writes one line per root
// kind (vm, machine_context, global_list, global_tbl, finalizer, end_proc, ...); a kind may repeat.
struct RootSet {
  StringId kind = 0;              // e.g. "machine_context"
  std::vector<ObjectId> targets;  // resolved references; addresses absent from the dump dropped
};

// The ROOT kind of the conservative scan of machine stacks and registers: words that look like
// object addresses, so an object kept only through it may be kept by a stale word.
inline constexpr std::string_view kMachineContextRoots = "machine_context";

// Allocation site: present only when the dump was taken with allocation tracing on
// (ObjectSpace.trace_object_allocations_start). file == 0 means "no site".
struct Site {
  StringId file = 0;
  uint32_t line = 0;
  bool operator==(const Site&) const = default;
};
using SiteId = uint32_t;  // index into Heap::sites; 0 is the empty site

// A problem the loader found on one line: the whole line skipped (e.g. "invalid JSON", "missing
// address"), or one value of it skipped while the rest of the line is kept (e.g. one reference
// that is not an address).
struct BadLine {
  uint64_t line_number = 0;  // 1-based line number in the (decompressed) dump
  std::string message;       // what is wrong: "invalid JSON", "references[2] \"zz\" is not an address"
  std::string consequence = "line skipped";  // what was lost because of it
};

// The value of a String the dump holds in full (Ruby writes "value" for ASCII strings only), as
// much as the duplicate-strings report needs: a digest of the whole value and its first bytes.
struct StringValue {
  static constexpr size_t kHeadSize = 24;
  ObjectId id = 0;
  uint32_t length = 0;  // bytes of the value as the dump writes it (JSON escapes kept), capped
  uint64_t hash = 0;    // of those bytes
  std::array<char, kHeadSize> head{};  // the first of them (fewer when length is smaller)

  std::string_view head_text() const { return {head.data(), std::min<size_t>(length, kHeadSize)}; }
};

struct Heap {
  // ---- per object, indexed by ObjectId ----
  BigVector<uint64_t> address;       // "address" as a number (0x7f35c85e0010)
  BigVector<ObjectType> type;        // "type"
  BigVector<uint16_t> flags;         // ObjectFlag bits
  BigVector<ObjectId> class_of;      // "class" resolved to the class object's id, or kNoObject
                                     // (no class field, or class object missing from the dump)
  BigVector<uint64_t> memsize;       // "memsize" in bytes (0 when absent); includes the slot
  BigVector<SiteId> site;            // "file"/"line" as a SiteId (0: not traced)
  BigVector<uint32_t> generation;    // "generation": GC count at allocation, or kNoGeneration
  BigVector<uint16_t> slot_size;     // "slot_size" (Ruby 3.2+), 0 when the dump has none.
                                     // Geometry hints: without it slots are one RVALUE (40
                                     // bytes on 64-bit); heap pages are 16 KB-aligned on
                                     // Ruby 2.x, 64 KB-aligned on 3.x (derive from addresses)
  BigVector<StringId> detail;        // "imemo_type" for IMEMO, "struct" for DATA, else 0

  // References in compressed sparse row form: the objects `id` references are
  // ref_targets[ref_begin[id] .. ref_begin[id + 1]). ref_begin has size() + 1 entries.
  // As in the dump, the object's own class is NOT among them (see class_of); references to
  // addresses absent from the dump (immediates, freed slots) are dropped and counted in
  // `dangling_references`.
  BigVector<uint32_t> ref_begin;
  BigVector<ObjectId> ref_targets;

  // ---- names ----
  StringPool strings;
  std::vector<Site> sites;  // sites[0] is the empty site
  // "name" of CLASS/MODULE objects. Absent for anonymous classes, singleton classes and ICLASSes.
  std::unordered_map<ObjectId, StringId> class_names;
  // "real_class_name" of CLASS objects without a name (Ruby 3.0+ writes it for singleton
  // classes): the class Ruby's obj.class answers for their object, e.g. "Class" for the
  // singleton class of a class.
  std::unordered_map<ObjectId, StringId> real_class_names;

  // STRING objects whose value the dump holds, in id order.
  BigVector<StringValue> string_values;
  // SYMBOL objects' names (the dump holds dynamic Symbols, each with its "value"), in id order.
  BigVector<StringValue> symbol_values;

  // ---- roots, shapes, diagnostics ----
  std::vector<RootSet> roots;
  uint64_t shape_count = 0;     // SHAPE lines (Ruby 3.3+), counted, not modeled
  uint64_t shape_memsize = 0;   // sum of their "memsize" fields
  uint64_t free_slot_count = 0;  // "NONE" lines of dump_all(full: true): empty slots, not objects
  uint64_t lines = 0;           // lines read, including bad and blank ones
  uint64_t input_bytes = 0;     // decompressed bytes read
  std::string cut_short;        // why the dump ended early ("truncated gzip stream", "cut off
                                // in the middle of a line"): it holds what came before
  uint64_t dangling_references = 0;  // references to addresses no object line has (dropped)
  uint64_t duplicate_addresses = 0;  // later lines reusing an address; references go to the first
  std::vector<BadLine> bad_lines;    // lines skipped; capped at kMaxBadLinesKept, bad_line_count
  uint64_t bad_line_count = 0;       // has the total
  uint64_t lost_root_lines = 0;      // of the skipped lines, those that were ROOT lines
  std::vector<BadLine> bad_values;   // values skipped in lines that were kept; capped likewise
  uint64_t bad_value_count = 0;
  uint64_t non_utf8_lines = 0;       // lines with bytes that are not UTF-8 (Ruby writes file
                                     // names as raw bytes), read with U+FFFD in their place
  static constexpr size_t kMaxBadLinesKept = 1000;

  size_t size() const { return address.size(); }
  // Whether the ROOT lines tell which objects are alive: without them, or with some unreadable,
  // an object no root reaches may still be alive, and every object must count as alive.
  bool reachability_known() const { return !roots.empty() && lost_root_lines == 0; }
  std::span<const ObjectId> references(ObjectId id) const {
    return {ref_targets.data() + ref_begin[id], ref_targets.data() + ref_begin[id + 1]};
  }
  std::string_view str(StringId id) const { return strings.view(id); }

  // The id of the object at `address`, or kNoObject.
  ObjectId find(uint64_t address) const { return index.find(address); }
  // Starts loading what find(address) reads into the cache: bulk lookups call it a few lookups
  // ahead (each find is otherwise a cache miss).
  void prefetch(uint64_t address) const { index.prefetch(address); }

  // The name of the class object `klass` as obj.class would say it: its "name", else its
  // "real_class_name" (singleton classes); "" for anonymous classes.
  std::string_view own_name(ObjectId klass) const;
  // "name" of the object's class ("String", "ActiveRecord::Base"), or "" when the class is
  // anonymous, missing from the dump, or the object has no class field.
  std::string_view class_name(ObjectId id) const;
  // What reports group objects by: class_name(); for IMEMO objects "(IMEMO:<imemo_type>)"
  // (their class field is not a class); "#<Class:0x...>" for an anonymous class; "(TYPE)"
  // when there is no class at all. DATA objects add their C struct: "Thread (VM/thread)",
  // "(DATA:encoding)" without a class.
  std::string class_label(ObjectId id) const;
  // What reports call one object: class and module objects by their own name ("Concurrent",
  // "#<Class:0x7f...>" when anonymous), a singleton class as Ruby does ("#<Class:Node>",
  // "#<Class:#<Object>>"; "#<Class:0x7f...> (singleton class of a Foo)" when the dump does not
  // say whose it is); any other object by class_label().
  std::string object_label(ObjectId id) const;
  // The object a singleton class belongs to, or kNoObject.
  ObjectId attached_object(ObjectId singleton) const;
  // "file:line" or "" when not traced.
  std::string site_label(ObjectId id) const;

  // Frees the address index once no more lookups by address are needed; find() returns
  // kNoObject afterwards. The commands call it before building the graph.
  void release_index() { index = AddressIndex{}; }

  // Builds the address index find() uses (the loader calls it once); returns the number of
  // duplicate addresses (the first object keeps the address).
  uint64_t build_index() {
    uint64_t duplicates = 0;
    index = AddressIndex::build(address, duplicates);
    return duplicates;
  }

  AddressIndex index;

 private:
  std::string object_label(ObjectId id, int depth) const;  // depth: singleton classes named so far
};

// The object's allocation generation, or nullopt when the dump has none for it.
inline std::optional<uint64_t> generation_of(const Heap& heap, ObjectId id) {
  if (heap.generation[id] == kNoGeneration) return std::nullopt;
  return heap.generation[id];
}

}  // namespace memprof::heap
