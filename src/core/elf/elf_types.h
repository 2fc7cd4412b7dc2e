// Plain values describing the parts of an ELF64 file. String views point into the file's bytes and
// stay valid as long as the ElfFile they came from (ElfFile keeps its mapping alive and never moves
// it, so moving the ElfFile does not invalidate them).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace memprof::elf {

// One program header (PT_LOAD, PT_DYNAMIC, PT_NOTE, ...).
struct Segment {
  uint32_t type = 0;   // PT_*
  uint32_t flags = 0;  // PF_R | PF_W | PF_X
  uint64_t offset = 0;
  uint64_t vaddr = 0;
  uint64_t filesz = 0;
  uint64_t memsz = 0;
  uint64_t align = 0;
};

// One section header, with its name resolved through .shstrtab ("" when the name is unreadable).
struct Section {
  std::string_view name;
  uint32_t type = 0;  // SHT_*
  uint64_t flags = 0;
  uint64_t addr = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t link = 0;
  uint32_t info = 0;
  uint64_t addralign = 0;
  uint64_t entsize = 0;
};

enum class SymbolTable { kDynamic, kStatic };

struct Symbol {
  std::string_view name;
  uint64_t value = 0;  // file (link-time) address; add the load bias for a runtime address
  uint64_t size = 0;
  uint8_t type = 0;              // STT_*
  uint8_t bind = 0;              // STB_*
  uint8_t visibility = 0;        // STV_*
  uint16_t section_index = 0;    // SHN_UNDEF for imports
  // Symbol version from .gnu.version + .gnu.version_d/.gnu.version_r; empty when unversioned.
  std::string_view version;
  // false for a hidden (non-default, "name@VER") version; true for "name@@VER" and unversioned.
  bool default_version = true;
  SymbolTable table = SymbolTable::kDynamic;

  bool defined() const { return section_index != 0; }
};

// A RELA relocation from .rela.dyn or .rela.plt, with its symbol resolved through .dynsym.
struct Relocation {
  uint64_t offset = 0;  // r_offset: the slot's file address (GOT entry for JUMP_SLOT/GLOB_DAT)
  uint32_t type = 0;    // R_X86_64_*
  uint32_t symbol_index = 0;
  std::string_view symbol_name;  // empty for RELATIVE and other symbol-less relocations
  int64_t addend = 0;
  bool plt = false;  // from .rela.plt (or DT_JMPREL) rather than .rela.dyn
};

struct DynamicEntry {
  int64_t tag = 0;  // DT_*
  uint64_t value = 0;
};

// One argument of a USDT probe, e.g. "-4@4(%rsp)": size -4 (signed 4 bytes), location "4(%rsp)".
struct UsdtArgument {
  int size = 0;  // bytes; negative for signed
  std::string_view location;
};

// A SystemTap SDT probe from .note.stapsdt.
struct UsdtProbe {
  std::string_view provider;
  std::string_view name;
  uint64_t pc = 0;         // file address of the probe's nop, adjusted for prelink
  uint64_t base = 0;       // address of .stapsdt.base as recorded in the note
  uint64_t semaphore = 0;  // file address of the is-enabled counter, 0 when none
  std::string_view arguments;  // the raw argument string
  std::vector<UsdtArgument> parsed_arguments;
};

struct DebugLink {
  std::string_view file;  // file name of the separate debug file
  uint32_t crc = 0;       // CRC-32 of that file's contents
};

}  // namespace memprof::elf
