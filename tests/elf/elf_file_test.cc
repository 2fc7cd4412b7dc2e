#include "core/elf/elf_file.h"

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "elf/test_util.h"

namespace memprof::elf {
namespace {

using testing::read_bytes;
using testing::temp_dir;
using testing::write_bytes;

bool has_segment(const ElfFile& file, uint32_t type) {
  return std::any_of(file.segments().begin(), file.segments().end(),
                     [&](const Segment& s) { return s.type == type; });
}

TEST(ElfFile, SharedLibraryHeadersSegmentsAndSections) {
  auto file = ElfFile::open(FIXTURE_LIB_LAZY);
  ASSERT_TRUE(file.ok()) << file.message();
  EXPECT_EQ(file->type(), ET_DYN);
  EXPECT_EQ(file->machine(), EM_X86_64);
  EXPECT_TRUE(has_segment(*file, PT_LOAD));
  EXPECT_TRUE(has_segment(*file, PT_DYNAMIC));
  EXPECT_EQ(file->first_load_address(), 0u);
  const Section* dynsym = file->section(".dynsym");
  ASSERT_NE(dynsym, nullptr);
  EXPECT_EQ(dynsym->type, uint32_t{SHT_DYNSYM});
  EXPECT_EQ(file->section_of_type(SHT_DYNSYM), dynsym);
  EXPECT_EQ(file->section(".no_such_section"), nullptr);
  auto data = file->section_data(*dynsym);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->size(), dynsym->size);
}

TEST(ElfFile, PieAndNonPieExecutables) {
  auto pie = ElfFile::open(FRAMES_PIE);
  auto nopie = ElfFile::open(FRAMES_NOPIE);
  ASSERT_TRUE(pie.ok() && nopie.ok());
  EXPECT_EQ(pie->type(), ET_DYN);
  EXPECT_EQ(pie->first_load_address(), 0u);
  EXPECT_EQ(nopie->type(), ET_EXEC);
  // The x86-64 default link address of non-PIE executables.
  EXPECT_EQ(nopie->first_load_address(), 0x400000u);
  EXPECT_TRUE(has_segment(*pie, PT_INTERP));
}

TEST(ElfFile, ReadsDataThroughLoadSegments) {
  auto file = ElfFile::open(FIXTURE_LIB_LAZY);
  ASSERT_TRUE(file.ok());
  auto symbols = file->dynamic_symbols();
  ASSERT_TRUE(symbols.ok());
  Symbol counter = testing::only_symbol(*symbols, "fixture_counter");
  auto bytes = file->bytes_at_address(counter.value, 4);
  ASSERT_TRUE(bytes.ok()) << bytes.message();
  int value = 0;
  std::memcpy(&value, bytes->data(), 4);
  EXPECT_EQ(value, 7);  // `int fixture_counter = 7;`
  auto outside = file->bytes_at_address(0x7fff00000000, 4);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.message(), std::string(FIXTURE_LIB_LAZY) +
                                   ": address 0x7fff00000000 (+4) is not in a loadable segment of the file");
}

TEST(ElfFile, DynamicEntriesNeededAndSoname) {
  auto lazy = ElfFile::open(FIXTURE_LIB_LAZY);
  auto now = ElfFile::open(FIXTURE_LIB_NOW);
  ASSERT_TRUE(lazy.ok() && now.ok());
  auto needed = lazy->needed_libraries();
  ASSERT_TRUE(needed.ok()) << needed.message();
  EXPECT_EQ(*needed, std::vector<std::string_view>{"libc.so.6"});
  auto soname = lazy->soname();
  ASSERT_TRUE(soname.ok());
  ASSERT_TRUE(soname->has_value());
  EXPECT_EQ(**soname, "libelf_fixture_lazy.so");

  // -z now shows up as DF_BIND_NOW in DT_FLAGS and DF_1_NOW in DT_FLAGS_1; -z lazy has neither.
  auto flags = [](const ElfFile& file, int64_t tag) {
    uint64_t value = 0;
    auto entries = file.dynamic_entries();
    EXPECT_TRUE(entries.ok()) << entries.message();
    if (!entries.ok()) return value;
    for (const auto& entry : *entries) {
      if (entry.tag == tag) value |= entry.value;
    }
    return value;
  };
  EXPECT_EQ(flags(*now, DT_FLAGS) & DF_BIND_NOW, uint64_t{DF_BIND_NOW});
  EXPECT_EQ(flags(*now, DT_FLAGS_1) & DF_1_NOW, uint64_t{DF_1_NOW});
  EXPECT_EQ(flags(*lazy, DT_FLAGS) & DF_BIND_NOW, 0u);
  EXPECT_EQ(flags(*lazy, DT_FLAGS_1) & DF_1_NOW, 0u);
}

TEST(ElfFileErrors, MissingFile) {
  auto file = ElfFile::open("/nonexistent/libmissing.so");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.message(), "/nonexistent/libmissing.so: No such file or directory");
}

TEST(ElfFileErrors, NotAnElfFile) {
  std::string path = temp_dir("not_elf") + "/text";
  write_bytes(path, {'h', 'e', 'l', 'l', 'o', '\n'});
  auto file = ElfFile::open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.message(), path + ": not an ELF file");

  std::string empty = temp_dir("empty") + "/empty";
  write_bytes(empty, {});
  EXPECT_EQ(ElfFile::open(empty).message(), empty + ": not an ELF file");
}

TEST(ElfFileErrors, Directory) {
  std::string dir = temp_dir("dir");
  EXPECT_EQ(ElfFile::open(dir).message(), dir + ": is a directory");
}

TEST(ElfFileErrors, AFifoIsRefusedWithoutWaitingForAWriter) {
  // Before: open() of a FIFO blocked until some process opened it for writing (forever).
  std::string fifo = temp_dir("fifo") + "/pipe";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ElfFile::open(fifo).message(), fifo + ": not a regular file");
  ::unlink(fifo.c_str());
}

TEST(ElfFileErrors, WrongClassAndByteOrder) {
  auto bytes = read_bytes(FIXTURE_LIB_LAZY);
  auto elf32 = bytes;
  elf32[EI_CLASS] = ELFCLASS32;
  EXPECT_EQ(ElfFile::parse(elf32, "lib").message(), "lib: not a 64-bit ELF file");
  auto big = bytes;
  big[EI_DATA] = ELFDATA2MSB;
  EXPECT_EQ(ElfFile::parse(big, "lib").message(), "lib: not a little-endian ELF file");
}

TEST(ElfFileErrors, BadTableEntrySizes) {
  auto bytes = read_bytes(FIXTURE_LIB_LAZY);
  auto header = *read_at<Elf64_Ehdr>(bytes, 0);
  auto bad_sections = bytes;
  header.e_shentsize = 32;
  std::memcpy(bad_sections.data(), &header, sizeof(header));
  EXPECT_EQ(ElfFile::parse(bad_sections, "lib").message(), "lib: bad section header size 32");

  header = *read_at<Elf64_Ehdr>(bytes, 0);
  header.e_shstrndx = static_cast<uint16_t>(header.e_shnum + 5);
  auto bad_names = bytes;
  std::memcpy(bad_names.data(), &header, sizeof(header));
  EXPECT_EQ(ElfFile::parse(bad_names, "lib").message(),
            fmt::format("lib: bad section name table index {}", header.e_shnum + 5));
}

// A section header whose data lies past the end of the file: the headers parse, the section
// itself reports the problem.
TEST(ElfFileErrors, SectionPastEndOfFile) {
  auto bytes = read_bytes(FIXTURE_LIB_LAZY);
  ASSERT_TRUE(testing::set_section_size(bytes, ".dynsym", bytes.size() * 2));
  auto corrupt = ElfFile::parse(bytes, "lib");
  ASSERT_TRUE(corrupt.ok());
  EXPECT_EQ(corrupt->dynamic_symbols().message(), "lib: section .dynsym extends past the end of the file");
  EXPECT_EQ(corrupt->relocations().message(), "lib: section .dynsym extends past the end of the file");
}

}  // namespace
}  // namespace memprof::elf

namespace memprof::elf {
namespace {

// The same library with its section header table removed (as sstrip does): the tables PT_DYNAMIC
// locates give the same dynamic symbols, versions, GNU hash lookups and relocations; the build-id
// comes from PT_NOTE.
TEST(ElfFileWithoutSections, DynamicTablesFromPtDynamic) {
  auto bytes = testing::read_bytes(FIXTURE_LIB_NOW);
  auto original = ElfFile::parse(bytes, "lib");
  ASSERT_TRUE(original.ok());
  auto stripped_bytes = bytes;
  stripped_bytes.resize(read_at<Elf64_Ehdr>(bytes, 0)->e_shoff);  // the table is the last thing in the file
  testing::forget_section_headers(stripped_bytes);
  auto stripped = ElfFile::parse(stripped_bytes, "lib");
  ASSERT_TRUE(stripped.ok()) << stripped.message();
  ASSERT_NE(stripped->section(".dynsym"), nullptr);

  auto expected = original->dynamic_symbols();
  auto actual = stripped->dynamic_symbols();
  ASSERT_TRUE(expected.ok() && actual.ok()) << actual.message();
  EXPECT_EQ(testing::describe(*actual), testing::describe(*expected));
  auto hidden = stripped->find_dynamic_symbol("fixture_versioned", "FIXTURE_1");
  ASSERT_TRUE(hidden.ok() && hidden->has_value()) << hidden.message();
  EXPECT_FALSE((*hidden)->default_version);

  auto expected_relocations = original->relocations();
  auto actual_relocations = stripped->relocations();
  ASSERT_TRUE(expected_relocations.ok() && actual_relocations.ok()) << actual_relocations.message();
  EXPECT_EQ(testing::describe(*actual_relocations), testing::describe(*expected_relocations));
  EXPECT_EQ(*stripped->build_id(), FIXTURE_LIB_BUILD_ID);
  EXPECT_EQ(stripped->usdt_probes()->size(), 0u);  // .note.stapsdt is not allocated: gone
}

}  // namespace
}  // namespace memprof::elf
