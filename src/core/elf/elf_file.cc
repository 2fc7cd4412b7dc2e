// Header, program header and section header parsing; address and section data access.
#include "core/elf/elf_file.h"

#include <elf.h>

#include <algorithm>

namespace memprof::elf {

namespace {
constexpr uint64_t kPageSize = 4096;  // x86-64 base page size
}  // namespace

Result<ElfFile> ElfFile::open(const std::string& path) {
  MEMPROF_TRY(mapped, MappedFile::open(path));
  auto owner = std::make_shared<const MappedFile>(std::move(mapped));
  MEMPROF_TRY(file, parse(owner->bytes(), path));
  file.owner_ = std::move(owner);
  return std::move(file);
}

Result<ElfFile> ElfFile::parse_owned(std::vector<unsigned char> bytes, std::string name) {
  auto owner = std::make_shared<const std::vector<unsigned char>>(std::move(bytes));
  MEMPROF_TRY(file, parse(Bytes(owner->data(), owner->size()), std::move(name)));
  file.owner_ = std::move(owner);
  return std::move(file);
}

Result<ElfFile> ElfFile::parse(Bytes bytes, std::string name) {
  ElfFile file;
  file.name_ = std::move(name);
  file.bytes_ = bytes;
  MEMPROF_TRY_STATUS(file.parse_headers());
  if (file.sections_.empty()) file.add_sections_from_dynamic();
  file.version_names_ = file.read_version_names();
  return file;
}

Status ElfFile::parse_headers() {
  if (bytes_.size() < SELFMAG || std::memcmp(bytes_.data(), ELFMAG, SELFMAG) != 0) {
    return err("{}: not an ELF file", name_);
  }
  if (bytes_.size() < EI_NIDENT) return err("{}: truncated ELF header", name_);
  if (bytes_[EI_CLASS] != ELFCLASS64) return err("{}: not a 64-bit ELF file", name_);
  if (bytes_[EI_DATA] != ELFDATA2LSB) return err("{}: not a little-endian ELF file", name_);
  auto header = read_at<Elf64_Ehdr>(bytes_, 0);
  if (!header) return err("{}: truncated ELF header", name_);
  type_ = header->e_type;
  machine_ = header->e_machine;
  entry_ = header->e_entry;

  if (header->e_phnum != 0) {
    if (header->e_phentsize != sizeof(Elf64_Phdr)) {
      return err("{}: bad program header size {}", name_, header->e_phentsize);
    }
    uint64_t table_size = uint64_t{header->e_phnum} * sizeof(Elf64_Phdr);
    if (!in_bounds(header->e_phoff, table_size, bytes_.size())) {
      return err("{}: truncated program header table", name_);
    }
    segments_.reserve(header->e_phnum);
    for (uint64_t i = 0; i < header->e_phnum; ++i) {
      auto phdr = *read_at<Elf64_Phdr>(bytes_, header->e_phoff + i * sizeof(Elf64_Phdr));
      segments_.push_back(Segment{phdr.p_type, phdr.p_flags, phdr.p_offset, phdr.p_vaddr,
                                  phdr.p_filesz, phdr.p_memsz, phdr.p_align});
    }
  }

  if (header->e_shoff == 0) return ok_status();
  if (header->e_shentsize != sizeof(Elf64_Shdr)) {
    return err("{}: bad section header size {}", name_, header->e_shentsize);
  }
  // Extended numbering: with 0xff00 sections or more, e_shnum is 0 and e_shstrndx is SHN_XINDEX;
  // the real values live in section header 0.
  auto first = read_at<Elf64_Shdr>(bytes_, header->e_shoff);
  if (!first) return err("{}: truncated section header table", name_);
  uint64_t count = header->e_shnum != 0 ? header->e_shnum : first->sh_size;
  uint64_t names_index = header->e_shstrndx == SHN_XINDEX ? first->sh_link : header->e_shstrndx;
  if (count > bytes_.size() / sizeof(Elf64_Shdr) ||
      !in_bounds(header->e_shoff, count * sizeof(Elf64_Shdr), bytes_.size())) {
    return err("{}: truncated section header table", name_);
  }
  std::vector<Elf64_Shdr> raw(count);
  for (uint64_t i = 0; i < count; ++i) {
    raw[i] = *read_at<Elf64_Shdr>(bytes_, header->e_shoff + i * sizeof(Elf64_Shdr));
  }
  Bytes names;
  if (names_index != SHN_UNDEF) {
    if (names_index >= count) return err("{}: bad section name table index {}", name_, names_index);
    const auto& table = raw[names_index];
    auto data = slice(bytes_, table.sh_offset, table.sh_size);
    if (!data || table.sh_type == SHT_NOBITS) return err("{}: truncated section name table", name_);
    names = *data;
  }
  sections_.reserve(count);
  for (const auto& shdr : raw) {
    std::string_view section_name;
    if (!names.empty()) {
      auto resolved = cstring_at(names, shdr.sh_name);
      if (!resolved) return err("{}: bad section name offset {}", name_, shdr.sh_name);
      section_name = *resolved;
    }
    sections_.push_back(Section{section_name, shdr.sh_type, shdr.sh_flags, shdr.sh_addr,
                                shdr.sh_offset, shdr.sh_size, shdr.sh_link, shdr.sh_info,
                                shdr.sh_addralign, shdr.sh_entsize});
  }
  return ok_status();
}

const Section* ElfFile::section(std::string_view name) const {
  auto it = std::find_if(sections_.begin(), sections_.end(),
                         [&](const Section& s) { return s.name == name; });
  return it == sections_.end() ? nullptr : &*it;
}

const Section* ElfFile::section_of_type(uint32_t type) const {
  auto it = std::find_if(sections_.begin(), sections_.end(),
                         [&](const Section& s) { return s.type == type; });
  return it == sections_.end() ? nullptr : &*it;
}

Result<Bytes> ElfFile::section_data(const Section& section) const {
  if (section.type == SHT_NOBITS) return Bytes{};
  auto data = slice(bytes_, section.offset, section.size);
  if (!data) return err("{}: section {} extends past the end of the file", name_, section.name);
  return *data;
}

Result<Bytes> ElfFile::bytes_at_address(uint64_t address, uint64_t size) const {
  for (const auto& segment : segments_) {
    if (segment.type != PT_LOAD || address < segment.vaddr) continue;
    uint64_t delta = address - segment.vaddr;
    if (!in_bounds(delta, size, segment.filesz)) continue;
    auto data = segment.offset > UINT64_MAX - delta ? std::nullopt
                                                    : slice(bytes_, segment.offset + delta, size);
    if (!data) {
      return err("{}: segment at {:#x} extends past the end of the file", name_, segment.vaddr);
    }
    return *data;
  }
  return err("{}: address {:#x} (+{}) is not in a loadable segment of the file", name_, address,
             size);
}

uint64_t ElfFile::first_load_address() const {
  uint64_t lowest = UINT64_MAX;
  for (const auto& segment : segments_) {
    if (segment.type != PT_LOAD) continue;
    // The loader maps whole pages: the first page of the lowest segment is where the mapping
    // starts (p_align may be larger, e.g. 2 MB, without the mapping being aligned to it).
    lowest = std::min(lowest, segment.vaddr & ~(kPageSize - 1));
  }
  return lowest == UINT64_MAX ? 0 : lowest;
}

}  // namespace memprof::elf
