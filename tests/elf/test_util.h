// Helpers shared by the ELF tests.
#pragma once

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/elf/elf_file.h"
#include "core/elf/object_symbols.h"

namespace memprof::elf::testing {

inline std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A fresh directory under the test's temporary directory.
inline std::string temp_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "memprof_elf_" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A fixture library loaded by the real loader, with its load bias: the oracle for addresses.
class LoadedFixture {
 public:
  explicit LoadedFixture(const char* path) : handle_(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ != nullptr) {
      link_map* map = nullptr;
      if (dlinfo(handle_, RTLD_DI_LINKMAP, &map) == 0) bias_ = map->l_addr;
    }
  }
  ~LoadedFixture() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  LoadedFixture(const LoadedFixture&) = delete;
  LoadedFixture& operator=(const LoadedFixture&) = delete;
  void* handle() const { return handle_; }
  uint64_t bias() const { return bias_; }

 private:
  void* handle_;
  uint64_t bias_ = 0;
};

// Sets sh_size in the section header of the first section called `name`; false when the file
// does not parse or has no such section.
inline bool set_section_size(std::vector<unsigned char>& bytes, std::string_view name, uint64_t size) {
  auto file = ElfFile::parse(bytes, "file");
  const Section* section = file.ok() ? file->section(name) : nullptr;
  if (section == nullptr) return false;
  auto header = *read_at<Elf64_Ehdr>(bytes, 0);
  uint64_t offset = header.e_shoff + (section - file->sections().data()) * sizeof(Elf64_Shdr);
  auto shdr = *read_at<Elf64_Shdr>(bytes, offset);
  shdr.sh_size = size;
  std::memcpy(bytes.data() + offset, &shdr, sizeof shdr);
  return true;
}

// What sstrip does to the ELF header: no section header table (the table's bytes stay, unnamed).
inline void forget_section_headers(std::vector<unsigned char>& bytes) {
  auto header = *read_at<Elf64_Ehdr>(bytes, 0);
  header.e_shoff = 0;
  header.e_shnum = 0;
  header.e_shstrndx = 0;
  std::memcpy(bytes.data(), &header, sizeof header);
}

// One line per symbol or relocation with every field, so that lists compare with EXPECT_EQ and
// a difference prints readably.
inline std::vector<std::string> describe(const std::vector<Symbol>& symbols) {
  std::vector<std::string> lines;
  for (const auto& s : symbols)
    lines.push_back(fmt::format("{}@{}{} value={:#x} size={} type={} bind={} vis={} shndx={} table={}",
                                s.name, s.default_version ? "@" : "", s.version, s.value, s.size,
                                s.type, s.bind, s.visibility, s.section_index, static_cast<int>(s.table)));
  return lines;
}
inline std::vector<std::string> describe(const std::vector<Relocation>& relocations) {
  std::vector<std::string> lines;
  for (const auto& r : relocations)
    lines.push_back(fmt::format("{:#x} type={} symbol={}:{} addend={} plt={}", r.offset, r.type,
                                r.symbol_index, r.symbol_name, r.addend, r.plt));
  return lines;
}

// The one defined symbol called `name` in `symbols` (fails the test when there is not exactly one).
inline Symbol only_symbol(const std::vector<Symbol>& symbols, std::string_view name) {
  std::vector<Symbol> found;
  for (const auto& symbol : symbols) {
    if (symbol.name == name && symbol.defined()) found.push_back(symbol);
  }
  EXPECT_EQ(found.size(), 1u) << name;
  return found.empty() ? Symbol{} : found.front();
}

}  // namespace memprof::elf::testing
