// Dynamic relocations (.rela.dyn, .rela.plt) with their symbol names.
#include <elf.h>

#include <algorithm>

#include "core/elf/elf_file.h"

namespace memprof::elf {

Result<std::vector<Relocation>> ElfFile::relocations() const {
  std::vector<Relocation> relocations;
  // Only allocated RELA sections are applied by the dynamic loader; .rela.text and friends in
  // relocatable objects are the static linker's business.
  std::vector<const Section*> tables;
  for (const auto& section : sections_) {
    if (section.type == SHT_RELA && (section.flags & SHF_ALLOC) != 0) tables.push_back(&section);
  }
  std::stable_partition(tables.begin(), tables.end(),
                        [](const Section* s) { return s->name != ".rela.plt"; });

  // .rela.dyn and .rela.plt normally link the same .dynsym: read it once.
  std::vector<Symbol> symbols;
  uint32_t symbols_link = 0;  // section index `symbols` came from; 0 for none
  for (const Section* table : tables) {
    if (table->entsize != sizeof(Elf64_Rela)) {
      return err("{}: {} has bad entry size {}", name_, table->name, table->entsize);
    }
    MEMPROF_TRY(data, section_data(*table));
    // sh_link names the symbol table; 0 means the relocations use no symbols.
    if (table->link != symbols_link) symbols.clear();
    if (table->link != 0 && table->link != symbols_link) {
      if (table->link >= sections_.size()) return err("{}: {} has a bad symbol table link", name_, table->name);
      const Section& symtab = sections_[table->link];
      if (symtab.type != SHT_DYNSYM && symtab.type != SHT_SYMTAB) {
        return err("{}: {} links to {}, not a symbol table", name_, table->name, symtab.name);
      }
      MEMPROF_TRY(read, read_symbol_table(symtab, symtab.type == SHT_DYNSYM ? SymbolTable::kDynamic
                                                                            : SymbolTable::kStatic));
      symbols = std::move(read);
    }
    symbols_link = table->link;
    uint64_t count = data.size() / sizeof(Elf64_Rela);
    for (uint64_t i = 0; i < count; ++i) {
      auto rela = *read_at<Elf64_Rela>(data, i * sizeof(Elf64_Rela));
      Relocation relocation;
      relocation.offset = rela.r_offset;
      relocation.type = static_cast<uint32_t>(ELF64_R_TYPE(rela.r_info));
      relocation.symbol_index = static_cast<uint32_t>(ELF64_R_SYM(rela.r_info));
      relocation.addend = rela.r_addend;
      relocation.plt = table->name == ".rela.plt";
      if (relocation.symbol_index != 0) {
        if (relocation.symbol_index >= symbols.size()) {
          return err("{}: relocation {} in {} names symbol {} of {}", name_, i, table->name,
                     relocation.symbol_index, symbols.size());
        }
        relocation.symbol_name = symbols[relocation.symbol_index].name;
      }
      relocations.push_back(relocation);
    }
  }
  return relocations;
}

}  // namespace memprof::elf
