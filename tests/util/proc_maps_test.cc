#include "core/util/proc_maps.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cerrno>
#include <filesystem>

#include "core/util/proc_file.h"

namespace memprof {
namespace {

TEST(ProcMaps, ParsesEveryField) {
  auto maps = parse_maps(
      "00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n"
      "7ffd8e1e9000-7ffd8e20a000 rw-p 00000000 00:00 0                          [stack]\n"
      "7f0000001000-7f0000003000 r--s 0001a000 fe:00 42   /tmp/name with spaces (deleted)\n"
      "7f0000005000-7f0000006000 ---p 00000000 00:00 0 \n");
  ASSERT_TRUE(maps.ok()) << maps.message();
  ASSERT_EQ(maps->size(), 4u);
  const MapEntry& text = (*maps)[0];
  EXPECT_EQ(text.start, 0x400000u);
  EXPECT_EQ(text.end, 0x452000u);
  EXPECT_TRUE(text.readable && text.executable);
  EXPECT_FALSE(text.writable || text.shared);
  EXPECT_EQ(text.protection(), PROT_READ | PROT_EXEC);
  EXPECT_EQ(text.offset, 0u);
  EXPECT_EQ(text.inode, 173521u);
  EXPECT_EQ(text.path, "/usr/bin/dbus-daemon");
  EXPECT_TRUE(text.is_file());
  EXPECT_FALSE(text.is_deleted_file());
  EXPECT_EQ(text.file_path(), "/usr/bin/dbus-daemon");
  EXPECT_TRUE(text.contains(0x451fff));
  EXPECT_FALSE(text.contains(0x452000));

  EXPECT_EQ((*maps)[1].path, "[stack]");
  EXPECT_TRUE((*maps)[1].writable);
  EXPECT_EQ((*maps)[1].protection(), PROT_READ | PROT_WRITE);
  EXPECT_FALSE((*maps)[1].is_file());

  const MapEntry& deleted = (*maps)[2];
  EXPECT_EQ(deleted.path, "/tmp/name with spaces (deleted)");
  EXPECT_EQ(deleted.offset, 0x1a000u);
  EXPECT_TRUE(deleted.shared);
  EXPECT_FALSE(deleted.is_file());
  EXPECT_TRUE(deleted.is_deleted_file());
  EXPECT_EQ(deleted.file_path(), "/tmp/name with spaces");
  EXPECT_FALSE((*maps)[1].is_deleted_file());
  EXPECT_EQ((*maps)[1].file_path(), "[stack]");

  EXPECT_EQ((*maps)[3].path, "");
  EXPECT_FALSE((*maps)[3].readable);
  EXPECT_EQ((*maps)[3].protection(), PROT_NONE);
}

TEST(ProcMaps, MalformedLinesNameTheirNumber) {
  EXPECT_EQ(parse_maps("zz-1000 r-xp 00000000 08:02 1 /a\n").message(),
            "maps line 1: malformed: zz-1000 r-xp 00000000 08:02 1 /a");
  EXPECT_EQ(parse_maps("1000-2000 r-xp 00000000 08:02 1 /a\n1000-2000 r-xp\n").message(),
            "maps line 2: malformed: 1000-2000 r-xp");
  EXPECT_EQ(parse_maps("2000-1000 r-xp 00000000 08:02 1 /a\n").message(),
            "maps line 1: malformed: 2000-1000 r-xp 00000000 08:02 1 /a");
}

TEST(ProcMaps, FindMappingSearchesSortedEntries) {
  auto maps = parse_maps(
      "1000-3000 r-xp 00000000 08:02 1 /a\n"
      "3000-4000 rw-p 00002000 08:02 1 /a\n"
      "8000-9000 rw-p 00000000 00:00 0\n");
  ASSERT_TRUE(maps.ok()) << maps.message();
  EXPECT_EQ(find_mapping(*maps, 0xfff), nullptr);
  EXPECT_EQ(find_mapping(*maps, 0x1000), &(*maps)[0]);
  EXPECT_EQ(find_mapping(*maps, 0x2fff), &(*maps)[0]);
  EXPECT_EQ(find_mapping(*maps, 0x3000), &(*maps)[1]);
  EXPECT_EQ(find_mapping(*maps, 0x4000), nullptr);  // the gap between /a and the anonymous map
  EXPECT_EQ(find_mapping(*maps, 0x8fff), &(*maps)[2]);
  EXPECT_EQ(find_mapping(*maps, 0x9000), nullptr);
  EXPECT_EQ(find_mapping({}, 0x1000), nullptr);
}

TEST(ProcMaps, SelfMapsHoldThisCode) {
  auto maps = read_self_maps();
  ASSERT_TRUE(maps.ok()) << maps.message();
  const MapEntry* code = find_mapping(*maps, reinterpret_cast<uint64_t>(&parse_maps));
  ASSERT_NE(code, nullptr);
  EXPECT_TRUE(code->executable);
  EXPECT_EQ(code->path, std::filesystem::canonical("/proc/self/exe").string());
}

TEST(ProcFile, MissingFileNamesPathAndErrno) {
  int error_number = 0;
  auto text = read_proc_file("/proc/self/no-such-file", &error_number);
  EXPECT_EQ(text.message(), "/proc/self/no-such-file: No such file or directory");
  EXPECT_EQ(error_number, ENOENT);
}

TEST(ProcFile, ReadsPastTheReportedSizeOfZero) {
  auto text = read_proc_file("/proc/self/status");
  ASSERT_TRUE(text.ok()) << text.message();
  EXPECT_TRUE(text->starts_with("Name:\t")) << *text;
  EXPECT_NE(text->find("\nPid:\t"), std::string::npos);
}

}  // namespace
}  // namespace memprof
