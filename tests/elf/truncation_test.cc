// Every prefix of a small real ELF file is an error with the exact reason, never a crash; and every
// accessor of every file that does parse returns a value or an error.
#include <elf.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <tuple>

#include "core/elf/elf_file.h"
#include "core/elf/object_symbols.h"
#include "core/elf/stack_frames.h"
#include "elf/test_util.h"

namespace memprof::elf {
namespace {

// Calls every parse path; returns how many of them failed.
int exercise(const ElfFile& file) {
  int failures = 0;
  failures += !file.dynamic_symbols().ok();
  failures += !file.static_symbols().ok();
  failures += !file.find_dynamic_symbol("fixture_add").ok();
  failures += !file.relocations().ok();
  failures += !file.dynamic_entries().ok();
  failures += !file.needed_libraries().ok();
  failures += !file.soname().ok();
  failures += !file.build_id().ok();
  failures += !file.debuglink().ok();
  failures += !file.usdt_probes().ok();
  for (const auto& section : file.sections()) failures += !file.section_data(section).ok();
  auto symbols = ObjectSymbols::from_file(file);
  if (symbols.ok()) {
    function_frames(*symbols);
  } else {
    ++failures;
  }
  return failures;
}

TEST(Truncation, EveryPrefixOfASharedLibrary) {
  auto bytes = testing::read_bytes(FIXTURE_LIB_LAZY);
  auto header = *read_at<Elf64_Ehdr>(bytes, 0);
  ASSERT_EQ(header.e_phoff, sizeof(Elf64_Ehdr));
  const uint64_t program_headers_end = header.e_phoff + header.e_phnum * sizeof(Elf64_Phdr);
  // The linker puts the section header table last.
  ASSERT_EQ(header.e_shoff + header.e_shnum * sizeof(Elf64_Shdr), bytes.size());

  for (size_t length = 0; length < bytes.size(); ++length) {
    auto file = ElfFile::parse(Bytes(bytes.data(), length), "lib");
    ASSERT_FALSE(file.ok()) << length;
    const char* expected = length < SELFMAG               ? "lib: not an ELF file"
                           : length < sizeof(Elf64_Ehdr)  ? "lib: truncated ELF header"
                           : length < program_headers_end ? "lib: truncated program header table"
                                                          : "lib: truncated section header table";
    ASSERT_EQ(file.message(), expected) << "prefix of " << length << " bytes";
  }
  auto whole = ElfFile::parse(bytes, "lib");
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(exercise(*whole), 0);
}

// Where the file bytes of the last segment of type `type` end; 0 when there is none.
uint64_t segments_end(const ElfFile& file, uint32_t type) {
  uint64_t end = 0;
  for (const auto& segment : file.segments())
    if (segment.type == type) end = std::max(end, segment.offset + segment.filesz);
  return end;
}

// Without the section header table (e_shoff = 0, as after sstrip), every prefix that holds the
// program headers parses. What lies wholly before the cut reads exactly as in the whole file;
// what the cut crosses is an error naming it: the dynamic segment (and with it every table it
// locates: .dynsym, versions, relocations) and the note segments (build-id).
TEST(Truncation, PartialResultsWithoutSectionHeaders) {
  auto bytes = testing::read_bytes(FIXTURE_LIB_LAZY);
  auto whole = ElfFile::parse(bytes, "lib");
  ASSERT_TRUE(whole.ok());
  // The tables PT_DYNAMIC locates lie before it in the file, so a cut after it keeps them whole.
  const uint64_t dynamic_end = segments_end(*whole, PT_DYNAMIC);
  const uint64_t notes_end = segments_end(*whole, PT_NOTE);
  ASSERT_GT(notes_end, 0u);
  for (const char* table : {".dynsym", ".dynstr", ".gnu.hash", ".gnu.version", ".gnu.version_d",
                            ".gnu.version_r", ".rela.dyn", ".rela.plt"}) {
    ASSERT_NE(whole->section(table), nullptr) << table;
    ASSERT_LE(whole->section(table)->offset + whole->section(table)->size, dynamic_end) << table;
  }
  const auto symbols = testing::describe(*whole->dynamic_symbols());
  const auto relocations = testing::describe(*whole->relocations());
  ASSERT_FALSE(symbols.empty());
  ASSERT_FALSE(relocations.empty());

  testing::forget_section_headers(bytes);
  const auto header = *read_at<Elf64_Ehdr>(bytes, 0);
  const uint64_t program_headers_end = header.e_phoff + header.e_phnum * sizeof(Elf64_Phdr);
  for (size_t length = program_headers_end; length <= bytes.size(); ++length) {
    auto file = ElfFile::parse(Bytes(bytes.data(), length), "lib");
    ASSERT_TRUE(file.ok()) << length << ": " << file.message();
    auto dynamic = file->dynamic_entries();
    auto dynamic_symbols = file->dynamic_symbols();
    auto dynamic_relocations = file->relocations();
    auto build_id = file->build_id();
    ASSERT_TRUE(dynamic_symbols.ok() && dynamic_relocations.ok()) << length;
    if (length >= dynamic_end) {
      ASSERT_TRUE(dynamic.ok()) << length;
      EXPECT_EQ(testing::describe(*dynamic_symbols), symbols) << length;
      EXPECT_EQ(testing::describe(*dynamic_relocations), relocations) << length;
    } else {
      ASSERT_FALSE(dynamic.ok()) << length;
      EXPECT_EQ(dynamic.message(), "lib: truncated dynamic segment") << length;
      EXPECT_TRUE(dynamic_symbols->empty()) << length;  // no table can be located
      EXPECT_TRUE(dynamic_relocations->empty()) << length;
    }
    if (length >= notes_end) {
      ASSERT_TRUE(build_id.ok()) << length;
      EXPECT_EQ(*build_id, FIXTURE_LIB_BUILD_ID) << length;
    } else {
      ASSERT_FALSE(build_id.ok()) << length;
      EXPECT_EQ(build_id.message(), "lib: truncated note segment") << length;
    }
    exercise(*file);
  }
}

// Every single-byte corruption of the section header table gives what the corrupted headers
// say: the exact header error when the name table or a name offset is unusable, otherwise every
// section exactly as its (corrupted) header describes it, and its data exactly the bytes it
// names or the error that they lie past the end of the file.
TEST(Truncation, CorruptSectionHeaders) {
  const auto original = testing::read_bytes(FIXTURE_LIB_LAZY);
  const auto header = *read_at<Elf64_Ehdr>(original, 0);
  auto past_end = [&](const Elf64_Shdr& s) {
    return s.sh_offset > original.size() || s.sh_size > original.size() - s.sh_offset;
  };
  for (uint64_t offset = header.e_shoff; offset < original.size(); ++offset) {
    auto bytes = original;
    bytes[offset] ^= 0xa5;
    std::vector<Elf64_Shdr> raw(header.e_shnum);
    std::memcpy(raw.data(), bytes.data() + header.e_shoff, raw.size() * sizeof(Elf64_Shdr));
    const Elf64_Shdr& names = raw[header.e_shstrndx];
    // The section names, or the error parse() must give.
    std::vector<std::string_view> name(raw.size());
    std::string error;
    if (past_end(names) || names.sh_type == SHT_NOBITS) error = "lib: truncated section name table";
    for (size_t i = 0; i < raw.size() && error.empty(); ++i) {
      const char* table = reinterpret_cast<const char*>(bytes.data() + names.sh_offset);
      const void* nul = raw[i].sh_name < names.sh_size
                            ? std::memchr(table + raw[i].sh_name, 0, names.sh_size - raw[i].sh_name)
                            : nullptr;
      if (nul == nullptr) error = fmt::format("lib: bad section name offset {}", raw[i].sh_name);
      else name[i] = std::string_view(table + raw[i].sh_name, static_cast<const char*>(nul));
    }

    auto file = ElfFile::parse(bytes, "lib");
    if (!error.empty()) {
      ASSERT_FALSE(file.ok()) << "byte " << offset;
      EXPECT_EQ(file.message(), error) << "byte " << offset;
      continue;
    }
    ASSERT_TRUE(file.ok()) << "byte " << offset << ": " << file.message();
    ASSERT_EQ(file->sections().size(), raw.size());
    for (size_t i = 0; i < raw.size(); ++i) {
      const Section& s = file->sections()[i];
      const Elf64_Shdr& r = raw[i];
      EXPECT_EQ(std::tie(s.name, s.type, s.flags, s.addr, s.offset, s.size, s.link, s.info, s.addralign, s.entsize),
                std::tie(name[i], r.sh_type, r.sh_flags, r.sh_addr, r.sh_offset, r.sh_size, r.sh_link,
                         r.sh_info, r.sh_addralign, r.sh_entsize))
          << "byte " << offset << ", section " << i;
      auto data = file->section_data(s);
      if (r.sh_type == SHT_NOBITS) {
        EXPECT_TRUE(data.ok() && data->empty()) << "byte " << offset << ", section " << i;
      } else if (past_end(r)) {
        ASSERT_FALSE(data.ok()) << "byte " << offset << ", section " << i;
        EXPECT_EQ(data.message(), fmt::format("lib: section {} extends past the end of the file", name[i]));
      } else {
        ASSERT_TRUE(data.ok()) << "byte " << offset << ", section " << i;
        EXPECT_EQ(data->data(), bytes.data() + r.sh_offset) << "byte " << offset << ", section " << i;
        EXPECT_EQ(data->size(), r.sh_size) << "byte " << offset << ", section " << i;
      }
    }
    exercise(*file);
  }
}

// .gnu.hash cut short (a smaller sh_size) anywhere before its hash chains: looking a symbol up
// is the exact error, whatever part the cut falls in (header, Bloom filter, buckets), never a
// read past the section. Cut exactly before the chains, the lookup reaches them and says so.
TEST(Truncation, GnuHashCutBeforeItsChains) {
  const auto original = testing::read_bytes(FIXTURE_LIB_LAZY);
  auto whole = ElfFile::parse(original, "lib");
  ASSERT_TRUE(whole.ok());
  const Section* hash = whole->section(".gnu.hash");
  ASSERT_NE(hash, nullptr);
  auto [nbuckets, symoffset, bloom_size, bloom_shift] =
      *read_at<std::array<uint32_t, 4>>(original, hash->offset);
  const uint64_t chains = 16 + uint64_t{bloom_size} * 8 + uint64_t{nbuckets} * 4;
  ASSERT_LT(chains, hash->size);
  auto found = whole->find_dynamic_symbol("fixture_add");
  ASSERT_TRUE(found.ok() && found->has_value());

  for (uint64_t size = 0; size <= chains; ++size) {
    auto bytes = original;
    ASSERT_TRUE(testing::set_section_size(bytes, ".gnu.hash", size));
    auto file = ElfFile::parse(bytes, "lib");
    ASSERT_TRUE(file.ok()) << file.message();
    auto cut = file->find_dynamic_symbol("fixture_add");
    ASSERT_FALSE(cut.ok()) << "cut after " << size << " bytes";
    EXPECT_EQ(cut.message(), size < chains ? "lib: truncated .gnu.hash" : "lib: truncated .gnu.hash chain")
        << "cut after " << size << " bytes";
  }
}

}  // namespace
}  // namespace memprof::elf
