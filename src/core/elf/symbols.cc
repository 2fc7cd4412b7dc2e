// .dynsym/.symtab reading, GNU symbol versions and the GNU hash lookup.
#include <elf.h>

#include <algorithm>
#include <array>

#include "core/elf/elf_file.h"

namespace memprof::elf {

namespace {

// Version indices are 15 bits; bit 15 of a .gnu.version entry marks a hidden version.
constexpr uint16_t kVersionIndexMask = 0x7fff;
constexpr uint16_t kVersionHidden = 0x8000;

Symbol make_symbol(const Elf64_Sym& raw, std::string_view name, SymbolTable kind) {
  Symbol symbol;
  symbol.name = name;
  symbol.value = raw.st_value;
  symbol.size = raw.st_size;
  symbol.type = ELF64_ST_TYPE(raw.st_info);
  symbol.bind = ELF64_ST_BIND(raw.st_info);
  symbol.visibility = ELF64_ST_VISIBILITY(raw.st_other);
  symbol.section_index = raw.st_shndx;
  symbol.table = kind;
  return symbol;
}

uint32_t gnu_hash(std::string_view name) {
  uint32_t h = 5381;
  for (unsigned char c : name) h = h * 33 + c;
  return h;
}

// The symbols of one table with their string table and, for .dynsym, the version data, so that
// single entries can be read without decoding the whole table (the hash lookup needs that).
struct TableView {
  const ElfFile* file = nullptr;
  SymbolTable kind = SymbolTable::kDynamic;
  Bytes entries;
  Bytes strings;
  uint64_t count = 0;
  Bytes versym;  // one uint16_t per entry, or empty

  // Just the name, to reject hash-chain neighbours before resolving anything else.
  std::optional<std::string_view> name_at(uint64_t index) const {
    auto raw = read_at<Elf64_Sym>(entries, index * sizeof(Elf64_Sym));
    return raw ? cstring_at(strings, raw->st_name) : std::nullopt;
  }

  Result<Symbol> at(uint64_t index) const {
    auto raw = read_at<Elf64_Sym>(entries, index * sizeof(Elf64_Sym));
    if (!raw) return err("{}: symbol {} out of range", file->name(), index);
    auto name = cstring_at(strings, raw->st_name);
    if (!name) return err("{}: symbol {} has a bad name offset {}", file->name(), index, raw->st_name);
    Symbol symbol = make_symbol(*raw, *name, kind);
    if (versym.empty()) return symbol;
    auto entry = read_at<uint16_t>(versym, index * sizeof(uint16_t));
    if (!entry) return err("{}: truncated .gnu.version", file->name());
    uint16_t version_index = *entry & kVersionIndexMask;
    // 0 is local and 1 is the unversioned global version: neither has a name.
    if (version_index <= VER_NDX_GLOBAL) return symbol;
    const auto& names = file->version_names();
    if (!names.ok()) return names.error();
    if (version_index >= names->size() || (*names)[version_index].empty()) {
      return err("{}: symbol {} has unknown version index {}", file->name(), *name, version_index);
    }
    symbol.version = (*names)[version_index];
    symbol.default_version = (*entry & kVersionHidden) == 0;
    return symbol;
  }
};

void set_version_name(std::vector<std::string_view>& names, uint16_t index, std::string_view name) {
  index &= kVersionIndexMask;
  if (names.size() <= index) names.resize(index + 1);
  names[index] = name;
}

}  // namespace

// Version definitions (.gnu.version_d) and requirements (.gnu.version_r) give the names of version
// indices. Both are linked lists inside their section; every step is bounds-checked and the walk
// is limited to the section's entry count (sh_info) so a cyclic list cannot loop forever.
Result<std::vector<std::string_view>> ElfFile::read_version_names() const {
  std::vector<std::string_view> names;
  auto strings_of = [&](const Section& section) -> Result<Bytes> {
    if (section.link >= sections_.size()) return err("{}: {} has a bad string table link", name_, section.name);
    return section_data(sections_[section.link]);
  };
  if (const Section* verdef = section_of_type(SHT_GNU_verdef)) {
    MEMPROF_TRY(data, section_data(*verdef));
    MEMPROF_TRY(strings, strings_of(*verdef));
    uint64_t offset = 0;
    for (uint32_t i = 0; i < verdef->info; ++i) {
      auto def = read_at<Elf64_Verdef>(data, offset);
      if (!def) return err("{}: truncated .gnu.version_d", name_);
      if (def->vd_cnt > 0) {
        auto aux = offset > UINT64_MAX - def->vd_aux ? std::nullopt
                                                     : read_at<Elf64_Verdaux>(data, offset + def->vd_aux);
        if (!aux) return err("{}: truncated .gnu.version_d", name_);
        auto name = cstring_at(strings, aux->vda_name);
        if (!name) return err("{}: bad version name offset {}", name_, aux->vda_name);
        set_version_name(names, def->vd_ndx, *name);
      }
      if (def->vd_next == 0) break;
      offset += def->vd_next;
    }
  }
  if (const Section* verneed = section_of_type(SHT_GNU_verneed)) {
    MEMPROF_TRY(data, section_data(*verneed));
    MEMPROF_TRY(strings, strings_of(*verneed));
    uint64_t offset = 0;
    for (uint32_t i = 0; i < verneed->info; ++i) {
      auto need = read_at<Elf64_Verneed>(data, offset);
      if (!need) return err("{}: truncated .gnu.version_r", name_);
      uint64_t aux_offset = offset + need->vn_aux;
      for (uint32_t j = 0; j < need->vn_cnt; ++j) {
        auto aux = read_at<Elf64_Vernaux>(data, aux_offset);
        if (!aux) return err("{}: truncated .gnu.version_r", name_);
        auto name = cstring_at(strings, aux->vna_name);
        if (!name) return err("{}: bad version name offset {}", name_, aux->vna_name);
        set_version_name(names, aux->vna_other, *name);
        if (aux->vna_next == 0) break;
        aux_offset += aux->vna_next;
      }
      if (need->vn_next == 0) break;
      offset += need->vn_next;
    }
  }
  return names;
}

namespace {

Result<TableView> open_table(const ElfFile& file, const Section& table, SymbolTable kind) {
  TableView view;
  view.file = &file;
  view.kind = kind;
  if (table.entsize != sizeof(Elf64_Sym)) {
    return err("{}: {} has bad entry size {}", file.name(), table.name, table.entsize);
  }
  MEMPROF_TRY(entries, file.section_data(table));
  view.entries = entries;
  view.count = entries.size() / sizeof(Elf64_Sym);
  if (table.link >= file.sections().size()) {
    return err("{}: {} has a bad string table link", file.name(), table.name);
  }
  MEMPROF_TRY(strings, file.section_data(file.sections()[table.link]));
  view.strings = strings;
  if (kind == SymbolTable::kDynamic) {
    if (const Section* versym = file.section_of_type(SHT_GNU_versym)) {
      MEMPROF_TRY(data, file.section_data(*versym));
      view.versym = data;
    }
  }
  return view;
}

}  // namespace

Result<std::vector<Symbol>> ElfFile::read_symbol_table(const Section& table, SymbolTable kind) const {
  MEMPROF_TRY(view, open_table(*this, table, kind));
  std::vector<Symbol> symbols;
  symbols.reserve(view.count);
  for (uint64_t i = 0; i < view.count; ++i) {
    MEMPROF_TRY(symbol, view.at(i));
    symbols.push_back(symbol);
  }
  return symbols;
}

Result<std::vector<Symbol>> ElfFile::dynamic_symbols() const {
  const Section* table = section_of_type(SHT_DYNSYM);
  if (table == nullptr) return std::vector<Symbol>{};
  return read_symbol_table(*table, SymbolTable::kDynamic);
}

Result<std::vector<Symbol>> ElfFile::static_symbols() const {
  const Section* table = section_of_type(SHT_SYMTAB);
  if (table == nullptr) return std::vector<Symbol>{};
  return read_symbol_table(*table, SymbolTable::kStatic);
}

Result<std::optional<Symbol>> ElfFile::find_dynamic_symbol(std::string_view name,
                                                           std::string_view version) const {
  const Section* table = section_of_type(SHT_DYNSYM);
  if (table == nullptr) return std::optional<Symbol>{};
  MEMPROF_TRY(view, open_table(*this, *table, SymbolTable::kDynamic));

  // Among several matches (e.g. a default and hidden versions), the default version wins.
  std::optional<Symbol> found;
  auto consider = [&](uint64_t index) -> Status {
    if (auto candidate = view.name_at(index); candidate && *candidate != name) return ok_status();
    MEMPROF_TRY(symbol, view.at(index));
    if (!symbol.defined()) return ok_status();  // the name matched above (or at() failed)
    if (!version.empty() && symbol.version != version) return ok_status();
    if (!found || (!found->default_version && symbol.default_version)) found = symbol;
    return ok_status();
  };

  const Section* hash = section_of_type(SHT_GNU_HASH);
  if (hash == nullptr) {
    for (uint64_t i = 0; i < view.count; ++i) MEMPROF_TRY_STATUS(consider(i));
    return found;
  }

  // .gnu.hash: header {nbuckets, symoffset, bloom_size, bloom_shift}, bloom words, buckets,
  // then one hash value per symbol from symoffset on, with bit 0 marking the end of a chain.
  MEMPROF_TRY(data, section_data(*hash));
  auto header = read_at<std::array<uint32_t, 4>>(data, 0);
  if (!header) return err("{}: truncated .gnu.hash", name_);
  auto [nbuckets, symoffset, bloom_size, bloom_shift] = *header;
  uint64_t bloom_offset = 16;
  uint64_t buckets_offset = bloom_offset + uint64_t{bloom_size} * 8;
  uint64_t chain_offset = buckets_offset + uint64_t{nbuckets} * 4;
  if (!in_bounds(0, chain_offset, data.size())) return err("{}: truncated .gnu.hash", name_);
  if (nbuckets == 0 || bloom_size == 0) return found;

  uint32_t h = gnu_hash(name);
  uint64_t word = *read_at<uint64_t>(data, bloom_offset + uint64_t{(h / 64) % bloom_size} * 8);
  uint64_t mask = (uint64_t{1} << (h % 64)) | (uint64_t{1} << ((h >> (bloom_shift % 32)) % 64));
  if ((word & mask) != mask) return found;

  uint32_t bucket = *read_at<uint32_t>(data, buckets_offset + uint64_t{h % nbuckets} * 4);
  if (bucket < symoffset) return found;
  for (uint64_t index = bucket; index < view.count; ++index) {
    auto chain = read_at<uint32_t>(data, chain_offset + (index - symoffset) * 4);
    if (!chain) return err("{}: truncated .gnu.hash chain", name_);
    if ((*chain | 1) == (h | 1)) MEMPROF_TRY_STATUS(consider(index));
    if (*chain & 1) break;
  }
  return found;
}

}  // namespace memprof::elf
