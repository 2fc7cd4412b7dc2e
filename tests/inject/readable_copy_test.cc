// make_readable_for: a library the target's user cannot read becomes a private copy it can, and
// load_library loads that copy into a process of another user.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "inject/inject.h"
#include "inject/target.h"

namespace memprof::inject {
namespace {

namespace fs = std::filesystem;
using testing::InjectTarget;

constexpr uid_t kNobody = 65534;

TEST(MakeReadableFor, ALibraryTheTargetCanReadIsUsedInPlace) {
  InjectTarget target("idle");
  auto path = make_readable_for(target.pid(), INJECT_COUNTER_LIB);
  ASSERT_TRUE(path.ok()) << path.message();
  EXPECT_EQ(*path, INJECT_COUNTER_LIB);
  EXPECT_TRUE(remove_private_copy(target.pid(), *path).ok());
  EXPECT_TRUE(fs::exists(INJECT_COUNTER_LIB)) << "only its own copies are removed";
}

TEST(MakeReadableFor, AnotherUsersProcessGetsAPrivateCopy) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to start a process as another user";
  // The fixture where nobody can run it; the library where nobody can read it.
  const fs::path open_dir = fs::temp_directory_path() / fmt::format("inject-open-{}", ::getpid());
  const fs::path closed_dir =
      fs::temp_directory_path() / fmt::format("inject-closed-{}", ::getpid());
  fs::create_directories(open_dir);
  fs::create_directories(closed_dir);
  fs::permissions(open_dir, fs::perms(0755));
  fs::permissions(closed_dir, fs::perms(0700));
  fs::copy_file(INJECT_TARGET, open_dir / "inject_target");
  fs::permissions(open_dir / "inject_target", fs::perms(0755));
  const std::string library = (closed_dir / "libcounter.so").string();
  fs::copy_file(INJECT_COUNTER_LIB, library);

  {
    testing::ChildProcess child({"setpriv", fmt::format("--reuid={}", kNobody),
                                 fmt::format("--regid={}", kNobody), "--clear-groups",
                                 (open_dir / "inject_target").string(), "read"});
    ASSERT_EQ(child.read_line_within(10000), "ready");

    auto copy = make_readable_for(child.pid(), library);
    ASSERT_TRUE(copy.ok()) << copy.message();
    ASSERT_TRUE(copy->starts_with("/tmp/memprof-inject-")) << *copy;
    struct stat file {}, directory {};
    ASSERT_EQ(::stat(copy->c_str(), &file), 0);
    ASSERT_EQ(::stat(fs::path(*copy).parent_path().c_str(), &directory), 0);
    EXPECT_EQ(file.st_uid, kNobody);
    EXPECT_EQ(file.st_mode & 07777, 0500u);
    EXPECT_EQ(directory.st_uid, kNobody);
    EXPECT_EQ(directory.st_mode & 07777, 0700u);

    auto loaded = load_library(child.pid(), *copy);
    EXPECT_TRUE(loaded.ok()) << loaded.message();
    EXPECT_TRUE(remove_private_copy(child.pid(), *copy).ok());
    EXPECT_FALSE(fs::exists(fs::path(*copy).parent_path()));
    ASSERT_TRUE(child.write_stdin("z"));
    EXPECT_EQ(child.read_line_within(10000), "read 1 z");
    EXPECT_EQ(child.read_line_within(10000), "signals 0");
    EXPECT_EQ(child.read_line_within(10000), "injections 1");
  }
  fs::remove_all(open_dir);
  fs::remove_all(closed_dir);
}

}  // namespace
}  // namespace memprof::inject
