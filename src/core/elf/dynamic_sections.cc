// Section headers rebuilt from PT_DYNAMIC for files that have none (sstrip'ed binaries, images
// copied out of memory). The dynamic loader never reads section headers: DT_SYMTAB, DT_STRTAB,
// DT_GNU_HASH, DT_VERSYM, DT_VERDEF, DT_VERNEED, DT_RELA and DT_JMPREL locate everything it needs,
// so the same tables can be described as sections and read by the ordinary section code.
#include <elf.h>

#include <algorithm>
#include <array>
#include <map>

#include "core/elf/elf_file.h"

namespace memprof::elf {

namespace {

// Symbol count of .dynsym from .gnu.hash: one past the highest index any bucket chain reaches.
std::optional<uint64_t> gnu_hash_symbol_count(Bytes hash) {
  auto header = read_at<std::array<uint32_t, 4>>(hash, 0);
  if (!header) return std::nullopt;
  auto [nbuckets, symoffset, bloom_size, bloom_shift] = *header;
  (void)bloom_shift;
  uint64_t buckets_offset = 16 + uint64_t{bloom_size} * 8;
  uint64_t chain_offset = buckets_offset + uint64_t{nbuckets} * 4;
  uint32_t highest = 0;
  for (uint64_t i = 0; i < nbuckets; ++i) {
    auto bucket = read_at<uint32_t>(hash, buckets_offset + i * 4);
    if (!bucket) return std::nullopt;
    highest = std::max(highest, *bucket);
  }
  if (highest < symoffset) return uint64_t{symoffset};
  // Follow the last chain to its end marker (bit 0).
  for (uint64_t index = highest;; ++index) {
    auto value = read_at<uint32_t>(hash, chain_offset + (index - symoffset) * 4);
    if (!value) return std::nullopt;
    if (*value & 1) return index + 1;
  }
}

}  // namespace

void ElfFile::add_sections_from_dynamic() {
  auto entries = dynamic_entries();
  if (!entries.ok() || entries->empty()) return;
  std::map<int64_t, uint64_t> tags;
  for (const auto& entry : *entries) tags.emplace(entry.tag, entry.value);
  auto tag = [&](int64_t key) -> std::optional<uint64_t> {
    auto it = tags.find(key);
    return it == tags.end() ? std::nullopt : std::optional<uint64_t>(it->second);
  };

  // File bytes from `address` to the end of its PT_LOAD segment: the size of tables the dynamic
  // section locates without a length.
  auto rest_of_segment = [&](uint64_t address) -> std::optional<std::pair<uint64_t, uint64_t>> {
    for (const auto& segment : segments_) {
      if (segment.type != PT_LOAD || address < segment.vaddr || address - segment.vaddr >= segment.filesz) {
        continue;
      }
      uint64_t delta = address - segment.vaddr;
      if (segment.offset > UINT64_MAX - delta) return std::nullopt;
      uint64_t offset = segment.offset + delta;
      if (offset >= bytes_.size()) return std::nullopt;
      return std::pair{offset, std::min(segment.filesz - delta, bytes_.size() - offset)};
    }
    return std::nullopt;
  };
  auto add = [&](std::string_view name, uint32_t type, uint64_t address, std::optional<uint64_t> size,
                 uint32_t link, uint32_t info, uint64_t entsize) -> bool {
    auto located = rest_of_segment(address);
    if (!located) return false;
    uint64_t length = size ? std::min(*size, located->second) : located->second;
    sections_.push_back(Section{name, type, SHF_ALLOC, address, located->first, length, link, info,
                                8, entsize});
    return true;
  };

  auto strtab = tag(DT_STRTAB);
  auto symtab = tag(DT_SYMTAB);
  if (!strtab || !symtab) return;
  // Index 0 is the null section, as in a real section header table.
  sections_.push_back(Section{});
  const uint32_t strtab_index = static_cast<uint32_t>(sections_.size());
  if (!add(".dynstr", SHT_STRTAB, *strtab, tag(DT_STRSZ), 0, 0, 0)) {
    sections_.clear();
    return;
  }

  std::optional<uint64_t> count;
  if (auto gnu_hash = tag(DT_GNU_HASH)) {
    uint32_t symtab_index = static_cast<uint32_t>(sections_.size() + 1);
    if (add(".gnu.hash", SHT_GNU_HASH, *gnu_hash, std::nullopt, symtab_index, 0, 0)) {
      auto data = slice(bytes_, sections_.back().offset, sections_.back().size);
      count = data ? gnu_hash_symbol_count(*data) : std::nullopt;
      if (!count) sections_.pop_back();
    }
  }
  if (!count) {
    // DT_HASH: nbucket, nchain; nchain is the number of symbols.
    auto hash = tag(DT_HASH);
    auto located = hash ? rest_of_segment(*hash) : std::nullopt;
    auto words = located ? read_at<std::array<uint32_t, 2>>(bytes_, located->first) : std::nullopt;
    if (words) count = (*words)[1];
  }
  if (!count) {
    sections_.clear();
    return;
  }
  const uint32_t dynsym_index = static_cast<uint32_t>(sections_.size());
  add(".dynsym", SHT_DYNSYM, *symtab, *count * sizeof(Elf64_Sym), strtab_index, 1, sizeof(Elf64_Sym));
  if (sections_.size() == dynsym_index) {
    sections_.clear();
    return;
  }
  if (auto versym = tag(DT_VERSYM)) {
    add(".gnu.version", SHT_GNU_versym, *versym, *count * 2, dynsym_index, 0, 2);
  }
  if (auto verdef = tag(DT_VERDEF)) {
    add(".gnu.version_d", SHT_GNU_verdef, *verdef, std::nullopt, strtab_index,
        static_cast<uint32_t>(tag(DT_VERDEFNUM).value_or(0)), 0);
  }
  if (auto verneed = tag(DT_VERNEED)) {
    add(".gnu.version_r", SHT_GNU_verneed, *verneed, std::nullopt, strtab_index,
        static_cast<uint32_t>(tag(DT_VERNEEDNUM).value_or(0)), 0);
  }
  if (auto rela = tag(DT_RELA)) {
    add(".rela.dyn", SHT_RELA, *rela, tag(DT_RELASZ).value_or(0), dynsym_index, 0, sizeof(Elf64_Rela));
  }
  if (auto jmprel = tag(DT_JMPREL); jmprel && tag(DT_PLTREL).value_or(DT_RELA) == DT_RELA) {
    add(".rela.plt", SHT_RELA, *jmprel, tag(DT_PLTRELSZ).value_or(0), dynsym_index, 0,
        sizeof(Elf64_Rela));
  }
}

}  // namespace memprof::elf
