// The objects loaded in this process, read from memory (dl_iterate_phdr and each object's
// PT_DYNAMIC): what GOT hooks patch and what call-site hooks scan. Unlike the ELF file parser
// (core/elf) this reads the loader's live view: relocated tables, the vdso, objects without a
// file on disk.
#pragma once

#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"

namespace memprof::hook {

struct LoadedSegment {
  uintptr_t start;  // absolute addresses
  uintptr_t end;
  uint32_t flags;   // PF_R | PF_W | PF_X
};

// Tables reached through DT_* entries. Pointers are absolute and lie inside the object's
// segments (checked when the object is read).
struct DynamicTables {
  const Elf64_Sym* symtab = nullptr;
  const char* strtab = nullptr;
  size_t strsz = 0;
  const Elf64_Rela* jmprel = nullptr;  // DT_JMPREL (PLT relocations)
  size_t jmprel_count = 0;
  const Elf64_Rela* rela = nullptr;    // DT_RELA
  size_t rela_count = 0;
  const Elf64_Half* versym = nullptr;
  const Elf64_Verneed* verneed = nullptr;
  size_t verneed_count = 0;
  const Elf64_Verdef* verdef = nullptr;
  size_t verdef_count = 0;
  const uint32_t* gnu_hash = nullptr;
  const uint32_t* sysv_hash = nullptr;
  size_t symbol_count = 0;  // from the hash table, else from the highest relocated index
};

// Identifies one loaded object across snapshots: a later object at the same address has a
// different dynamic section address or bias only if it is a different file, so hooks also check
// before writing that the object they patched is still the one loaded.
struct ObjectKey {
  uintptr_t bias = 0;
  const Elf64_Dyn* dynamic = nullptr;
  bool operator==(const ObjectKey&) const = default;
};

enum class ObjectRole { kProgram, kLibrary, kLoader, kVdso, kHookLibrary };

struct LoadedObject {
  std::string path;  // the loader's name; the main program's is /proc/self/exe resolved
  uintptr_t bias = 0;
  const Elf64_Dyn* dynamic = nullptr;  // with bias, identifies the object across snapshots
  ObjectRole role = ObjectRole::kLibrary;
  std::vector<LoadedSegment> segments;  // PT_LOAD
  // PT_GNU_EH_FRAME (.eh_frame_hdr: the sorted start addresses of the functions with unwind
  // information), when present and inside a readable segment; {0, 0} otherwise.
  LoadedSegment eh_frame_hdr{0, 0, 0};
  DynamicTables tables;
  std::string problem;  // non-empty when PT_DYNAMIC could not be read; tables are then empty

  bool contains(uintptr_t address) const;
  ObjectKey key() const { return {bias, dynamic}; }
  std::string_view symbol_name(uint32_t index) const;  // "" when out of range
  // Version name bound to an imported symbol (DT_VERNEED), "" when unversioned.
  std::string_view needed_version(uint32_t symbol_index) const;
  // Version name of a defined symbol (DT_VERDEF), "" when unversioned.
  std::string_view defined_version(uint32_t symbol_index) const;
  bool version_hidden(uint32_t symbol_index) const;  // a non-default "name@VER" definition
  // Indexes of the dynamic symbols named `name` (hash table lookup).
  std::vector<uint32_t> find_symbols(std::string_view name) const;
};

// Every object currently loaded, in load order (the main program first), each read whole while
// the loader could not unload it. Nothing keeps them loaded afterwards: another thread's
// dlclose may unmap an object whose tables a caller goes on reading.
Result<std::vector<LoadedObject>> loaded_objects();

// The object containing `address`, from a fresh snapshot.
Result<LoadedObject> object_containing(const void* address);

// The identity of the object containing `address`, read from program headers only: cheaper
// than object_containing, and it reads nothing an unload could take away.
Result<ObjectKey> object_key_containing(const void* address);

// Whether the object `key` names is still loaded.
bool is_loaded(const ObjectKey& key);
// Whether `objects` (one snapshot) holds the object `key` names.
bool is_loaded(const std::vector<LoadedObject>& objects, const ObjectKey& key);

}  // namespace memprof::hook
