#include "core/proc/maps.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "proc/subprocess.h"

namespace memprof::proc {
namespace {

// The parser itself is tested where it lives: tests/util/proc_maps_test.cc.
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
