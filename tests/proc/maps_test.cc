#include "core/proc/maps.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "proc/subprocess.h"

namespace memprof::proc {
namespace {

TEST(Maps, ParsesEveryField) {
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
  EXPECT_EQ(text.offset, 0u);
  EXPECT_EQ(text.inode, 173521u);
  EXPECT_EQ(text.path, "/usr/bin/dbus-daemon");
  EXPECT_TRUE(text.is_file());
  EXPECT_TRUE(text.contains(0x451fff));
  EXPECT_FALSE(text.contains(0x452000));

  EXPECT_EQ((*maps)[1].path, "[stack]");
  EXPECT_TRUE((*maps)[1].writable);
  EXPECT_FALSE((*maps)[1].is_file());

  const MapEntry& deleted = (*maps)[2];
  EXPECT_EQ(deleted.path, "/tmp/name with spaces (deleted)");
  EXPECT_EQ(deleted.offset, 0x1a000u);
  EXPECT_TRUE(deleted.shared);
  EXPECT_FALSE(deleted.is_file());

  EXPECT_EQ((*maps)[3].path, "");
  EXPECT_FALSE((*maps)[3].readable);
}

TEST(Maps, MalformedLinesNameTheirNumber) {
  EXPECT_EQ(parse_maps("zz-1000 r-xp 00000000 08:02 1 /a\n").message(),
            "maps line 1: malformed: zz-1000 r-xp 00000000 08:02 1 /a");
  EXPECT_EQ(parse_maps("1000-2000 r-xp 00000000 08:02 1 /a\n1000-2000 r-xp\n").message(),
            "maps line 2: malformed: 1000-2000 r-xp");
  EXPECT_EQ(parse_maps("2000-1000 r-xp 00000000 08:02 1 /a\n").message(),
            "maps line 1: malformed: 2000-1000 r-xp 00000000 08:02 1 /a");
}

TEST(Maps, OwnExecutableIsMapped) {
  auto maps = read_maps(::getpid());
  ASSERT_TRUE(maps.ok()) << maps.message();
  auto here = reinterpret_cast<uint64_t>(&parse_maps);
  std::string exe = std::filesystem::canonical("/proc/self/exe").string();
  int containing = 0;
  for (const auto& entry : *maps) {
    if (!entry.contains(here)) continue;
    ++containing;
    EXPECT_TRUE(entry.executable);
    EXPECT_EQ(entry.path, exe);
  }
  EXPECT_EQ(containing, 1);
}

TEST(Maps, NoSuchProcess) {
  memprof::testing::ChildProcess child({TARGET_PIE});
  ASSERT_TRUE(child.started());
  pid_t pid = child.pid();
  child.kill_and_wait();
  EXPECT_EQ(read_maps(pid).message(), "no such process: " + std::to_string(pid));
  EXPECT_EQ(read_maps(0).message(), "no such process: 0");
  EXPECT_EQ(read_maps(-5).message(), "no such process: -5");
}

}  // namespace
}  // namespace memprof::proc
