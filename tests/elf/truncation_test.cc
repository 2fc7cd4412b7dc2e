// Every prefix of a small real ELF file is an error with the exact reason, never a crash; and every
// accessor of every file that does parse returns a value or an error.
#include <elf.h>
#include <gtest/gtest.h>

#include <array>

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

// Without the section header table (e_shoff = 0, as after sstrip), a truncated file still parses:
// the parts that lie past the end report errors, the parts before it work.
TEST(Truncation, PartialResultsWithoutSectionHeaders) {
  auto bytes = testing::read_bytes(FIXTURE_LIB_LAZY);
  auto header = *read_at<Elf64_Ehdr>(bytes, 0);
  header.e_shoff = 0;
  header.e_shnum = 0;
  header.e_shstrndx = 0;
  std::memcpy(bytes.data(), &header, sizeof(header));
  const uint64_t program_headers_end = header.e_phoff + header.e_phnum * sizeof(Elf64_Phdr);
  int parsed = 0;
  for (size_t length = program_headers_end; length <= bytes.size(); ++length) {
    auto file = ElfFile::parse(Bytes(bytes.data(), length), "lib");
    ASSERT_TRUE(file.ok()) << length << ": " << file.message();
    exercise(*file);
    ++parsed;
  }
  EXPECT_EQ(parsed, static_cast<int>(bytes.size() - program_headers_end + 1));
}

// Every single-byte corruption of the section header table: an error or a valid parse.
TEST(Truncation, CorruptSectionHeaders) {
  const auto original = testing::read_bytes(FIXTURE_LIB_LAZY);
  auto header = *read_at<Elf64_Ehdr>(original, 0);
  for (uint64_t offset = header.e_shoff; offset < original.size(); ++offset) {
    auto bytes = original;
    bytes[offset] ^= 0xa5;
    auto file = ElfFile::parse(bytes, "lib");
    if (file.ok()) exercise(*file);
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
