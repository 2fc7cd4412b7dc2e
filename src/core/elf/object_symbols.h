// All function and object symbols of one ELF file, merged from .dynsym, .symtab and the separate
// debug file when one is installed, sorted by address, with lookups by name and by address.
// Addresses are file (link-time) addresses; callers add the load bias.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/elf/debug_file.h"
#include "core/elf/elf_file.h"
#include "core/util/result.h"

namespace memprof::elf {

class ObjectSymbols {
 public:
  struct Entry {
    std::string_view name;
    std::string_view version;  // empty when unversioned
    bool default_version = true;
    uint64_t address = 0;
    uint64_t size = 0;
    uint8_t type = 0;  // STT_FUNC, STT_OBJECT, STT_GNU_IFUNC, ...
    uint8_t bind = 0;
    SymbolTable table = SymbolTable::kDynamic;

    // "name", "name@@VER" (default version) or "name@VER" (hidden version).
    std::string display_name() const;
  };

  struct AddressMatch {
    const Entry* symbol = nullptr;
    uint64_t offset = 0;  // address - symbol->address
  };

  // Loads `path`, and its debug file through `search` unless `use_debug_files` is false.
  static Result<ObjectSymbols> load(const std::string& path, bool use_debug_files = true,
                                    const DebugSearchPath& search = {});
  // Symbols of an already parsed file (no debug-file lookup). The result keeps `file` (and the
  // mapping it owns) alive; for a file made by ElfFile::parse the caller keeps the bytes alive.
  static Result<ObjectSymbols> from_file(ElfFile file);

  const ElfFile& file() const { return *files_.front(); }
  // The debug file merged in, when one was found.
  const std::optional<std::string>& debug_file_path() const { return debug_path_; }

  // Defined, named symbols with an address (imports, section and file symbols are left out);
  // sorted by address then name, one entry per (name, version, address): the versions of one
  // function (libc's aio_cancel@GLIBC_2.2.5 and aio_cancel@@GLIBC_2.34) are entries of their own.
  const std::vector<Entry>& entries() const { return entries_; }
  // Defined thread-local variables (STT_TLS: errno): `address` is the variable's offset in the
  // object's TLS block, of which every thread has its own copy. Never matched by address.
  const std::vector<Entry>& thread_locals() const { return thread_locals_; }
  // Every entry with this name (unversioned name; "name@VER" and "name@@VER" also accepted).
  std::vector<const Entry*> find(std::string_view name) const;
  // The symbol whose [address, address + size) contains `address` (the nearest start among nested
  // ones). Size-0 symbols never match: an address past a symbol's end is not guessed at.
  std::optional<AddressMatch> find_address(uint64_t address) const;

 private:
  void add(const std::vector<Symbol>& symbols);
  void finish();

  // Owned parsed files (the object, then its debug file); entries' names point into them.
  std::vector<std::shared_ptr<const ElfFile>> files_;
  std::optional<std::string> debug_path_;
  std::vector<Entry> entries_;
  std::vector<Entry> thread_locals_;
  std::vector<uint32_t> by_name_;  // indices of entries_ sorted by name
  uint64_t max_size_ = 0;          // bounds the backwards walk of find_address
};

}  // namespace memprof::elf
