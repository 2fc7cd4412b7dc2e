// Symbols of every object loaded in a process at their runtime addresses: lookups by name and by
// address (address -> symbol + offset, object) across the whole process.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/elf/object_symbols.h"
#include "core/proc/loaded_objects.h"
#include "core/util/result.h"

namespace memprof::proc {

struct IndexedObject {
  LoadedObject object;
  std::shared_ptr<const elf::ObjectSymbols> symbols;
};

struct RuntimeSymbol {
  const elf::ObjectSymbols::Entry* symbol = nullptr;
  const IndexedObject* object = nullptr;
  uint64_t address = 0;  // runtime address: symbol->address + object->object.load_bias
};

struct AddressLookup {
  const IndexedObject* object = nullptr;  // the object whose segments contain the address
  const elf::ObjectSymbols::Entry* symbol = nullptr;  // null when no symbol covers it
  uint64_t offset = 0;  // from the symbol's start (or from the load bias when no symbol)
};

class SymbolIndex {
 public:
  // This process. With use_debug_files, symbols of installed separate debug files are merged.
  static Result<SymbolIndex> for_self(bool use_debug_files = true);
  // Another process; its files are read where LoadedObject::file says (its own mounts, files
  // deleted since they were mapped).
  static Result<SymbolIndex> for_process(pid_t pid, bool use_debug_files = true);
  // Objects already enumerated in process `pid` (whose memory holds the vdso image); files are
  // opened at their `file`. Objects whose file cannot be read or parsed are kept without
  // symbols and their error goes to warnings().
  static SymbolIndex build(std::vector<LoadedObject> objects, pid_t pid, bool use_debug_files = true);

  const std::vector<IndexedObject>& objects() const { return objects_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Every defined symbol called `name` ("name@VER" also accepted), in object order.
  std::vector<RuntimeSymbol> find(std::string_view name) const;
  // The object and symbol containing a runtime address; nothing when no object's segment holds it.
  std::optional<AddressLookup> lookup(uint64_t address) const;
  // "symbol+0x12 (object)", "0x7f... (object+0x1234)" or "0x7f..." for display.
  std::string describe(uint64_t address) const;

 private:
  std::vector<IndexedObject> objects_;
  std::vector<std::string> warnings_;
};

}  // namespace memprof::proc
