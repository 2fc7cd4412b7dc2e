// ELF64 (x86-64, little endian) files parsed from a byte span with bounds checks on every read.
//
//   MEMPROF_TRY(file, elf::ElfFile::open("/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"));
//   MEMPROF_TRY(symbols, file.dynamic_symbols());
//
// open()/parse() validate the header and the program and section header tables; every other part is
// parsed when asked for and reports its own error. A file without section headers (sstrip, an
// image copied out of memory) gets sections rebuilt from PT_DYNAMIC (.dynsym, .dynstr, .gnu.hash,
// versions, .rela.dyn, .rela.plt), so its dynamic symbols and relocations read the same way. Errors name the file and what is wrong with it:
// "libfoo.so: truncated section header table". Nothing here aborts or reads out of bounds on
// malformed input (fuzz/fuzz_elf.cc keeps it that way). An ElfFile is immutable once parsed, so
// its const methods may be called from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/elf/byte_reader.h"
#include "core/elf/elf_types.h"
#include "core/util/mapped_file.h"
#include "core/util/result.h"

namespace memprof::elf {

class ElfFile {
 public:
  // Maps and parses the file at `path`.
  static Result<ElfFile> open(const std::string& path);
  // Parses bytes owned by the caller, who keeps them alive as long as the ElfFile and anything
  // taken from it. `name` prefixes error messages.
  static Result<ElfFile> parse(Bytes bytes, std::string name);
  // Parses bytes the ElfFile takes over (e.g. an image copied out of another process's memory).
  static Result<ElfFile> parse_owned(std::vector<unsigned char> bytes, std::string name);

  const std::string& name() const { return name_; }
  Bytes bytes() const { return bytes_; }
  uint16_t type() const { return type_; }  // ET_EXEC, ET_DYN, ...
  uint16_t machine() const { return machine_; }
  uint64_t entry() const { return entry_; }

  const std::vector<Segment>& segments() const { return segments_; }
  // The section headers, or the ones rebuilt from PT_DYNAMIC when the file has none.
  const std::vector<Section>& sections() const { return sections_; }
  // The first section with this name, or nullptr.
  const Section* section(std::string_view name) const;
  // The first section of this SHT_* type, or nullptr.
  const Section* section_of_type(uint32_t type) const;
  // The section's bytes in the file (empty for SHT_NOBITS); an error when they lie outside it.
  Result<Bytes> section_data(const Section& section) const;
  // Bytes at a file (link-time) address, through the PT_LOAD segment that contains them.
  Result<Bytes> bytes_at_address(uint64_t address, uint64_t size) const;
  // Lowest PT_LOAD p_vaddr rounded down to its page: subtract it from the start of the mapping of
  // file offset 0 to get the load bias.
  uint64_t first_load_address() const;

  // .dynsym / .symtab with names and versions. An absent table gives an empty list.
  Result<std::vector<Symbol>> dynamic_symbols() const;
  Result<std::vector<Symbol>> static_symbols() const;
  // Looks a defined symbol up in .dynsym through .gnu.hash (as the dynamic loader does); falls back
  // to a linear scan when the file has no .gnu.hash. With `version` empty any version matches,
  // preferring the default one.
  Result<std::optional<Symbol>> find_dynamic_symbol(std::string_view name,
                                                    std::string_view version = {}) const;

  // Names of the version indices used by .gnu.version, from .gnu.version_d (definitions) and
  // .gnu.version_r (requirements); unnamed indices are empty. Read once when the file is parsed
  // (symbol lookups need them every time); an error here surfaces from the symbol functions.
  const Result<std::vector<std::string_view>>& version_names() const { return version_names_; }

  // .rela.dyn and .rela.plt, in file order (dyn first).
  Result<std::vector<Relocation>> relocations() const;
  // PT_DYNAMIC entries up to DT_NULL. Empty for a static executable.
  Result<std::vector<DynamicEntry>> dynamic_entries() const;
  // DT_NEEDED / DT_SONAME strings (resolved through DT_STRTAB).
  Result<std::vector<std::string_view>> needed_libraries() const;
  Result<std::optional<std::string_view>> soname() const;

  // The NT_GNU_BUILD_ID note as lowercase hex; empty when the file has none.
  Result<std::string> build_id() const;
  Result<std::optional<DebugLink>> debuglink() const;
  Result<std::vector<UsdtProbe>> usdt_probes() const;

 private:
  ElfFile() = default;
  Status parse_headers();
  // For files without section headers: describes the tables PT_DYNAMIC locates as sections.
  void add_sections_from_dynamic();
  Result<std::vector<Symbol>> read_symbol_table(const Section& table, SymbolTable kind) const;
  // The DT_STRTAB/DT_STRSZ string table named by `entries` (from dynamic_entries()).
  Result<Bytes> dynamic_strings(const std::vector<DynamicEntry>& entries) const;
  Result<std::vector<std::string_view>> read_version_names() const;

  // Owner of bytes_ (a MappedFile or a byte vector) unless the caller owns them. Shared so that
  // copies of the ElfFile and of values taken from it stay valid.
  std::shared_ptr<const void> owner_;
  std::string name_;
  Bytes bytes_;
  uint16_t type_ = 0;
  uint16_t machine_ = 0;
  uint64_t entry_ = 0;
  std::vector<Segment> segments_;
  std::vector<Section> sections_;
  Result<std::vector<std::string_view>> version_names_ = std::vector<std::string_view>{};
};

}  // namespace memprof::elf
