#include "report/output_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace memprof::report {
namespace {

namespace fs = std::filesystem;

const std::vector<unsigned char> kBytes = {'a', 0, 'b'};

// A fresh directory under the test's temporary directory, removed at the end.
class OutputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("memprof_output_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::permissions(dir_, fs::perms::owner_all);
    fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static std::string contents(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }

  fs::path dir_;
};

TEST_F(OutputFile, WritesAllBytesAndReportsUnwritablePaths) {
  ASSERT_TRUE(write_output_file(path("heap.png"), kBytes));
  EXPECT_EQ(contents(path("heap.png")), std::string("a\0b", 3));
  EXPECT_EQ(write_output_file("/nonexistent-dir/heap.png", kBytes).message(),
            "cannot write /nonexistent-dir/heap.png: No such file or directory");
  EXPECT_EQ(write_output_file(dir_.string(), kBytes).message(), "cannot write " + dir_.string() + ": Is a directory");
}

TEST_F(OutputFile, AnotherHardLinkKeepsTheOldBytes) {
  std::ofstream(path("report.html")) << "old";
  fs::create_hard_link(path("report.html"), path("copy.html"));
  ASSERT_TRUE(write_output_file(path("report.html"), kBytes));
  EXPECT_EQ(contents(path("report.html")), std::string("a\0b", 3));
  EXPECT_EQ(contents(path("copy.html")), "old");
}

TEST_F(OutputFile, AnExistingFileKeepsItsModeAndOwner) {
  std::ofstream(path("private.png")) << "old";
  ASSERT_EQ(::chmod(path("private.png").c_str(), 0600), 0);
  const bool root = ::geteuid() == 0;
  if (root) {
    ASSERT_EQ(::chown(path("private.png").c_str(), 65534, 65534), 0);
  }
  ASSERT_TRUE(write_output_file(path("private.png"), kBytes));
  struct stat after {};
  ASSERT_EQ(::stat(path("private.png").c_str(), &after), 0);
  EXPECT_EQ(after.st_mode & 07777, 0600u);
  if (root) {
    EXPECT_EQ(after.st_uid, 65534u);
    EXPECT_EQ(after.st_gid, 65534u);
  }
  EXPECT_EQ(contents(path("private.png")), std::string("a\0b", 3));
}

TEST_F(OutputFile, ASymlinkStaysALinkAndItsTargetGetsTheBytes) {
  std::ofstream(path("target.png")) << "old";
  fs::create_symlink(path("target.png"), path("link.png"));
  ASSERT_TRUE(write_output_file(path("link.png"), kBytes));
  EXPECT_TRUE(fs::is_symlink(path("link.png")));
  EXPECT_EQ(contents(path("target.png")), std::string("a\0b", 3));

  // A link to nowhere yet: the file it names is created.
  fs::create_symlink(path("later.png"), path("dangling.png"));
  ASSERT_TRUE(write_output_file(path("dangling.png"), kBytes));
  EXPECT_TRUE(fs::is_symlink(path("dangling.png")));
  EXPECT_EQ(contents(path("later.png")), std::string("a\0b", 3));
}

TEST_F(OutputFile, AFifoIsWrittenThroughNotReplaced) {
  ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0600), 0);
  // The read end opened first (without blocking): the write then finds a reader, and fits in
  // the pipe's buffer.
  const int reader = ::open(path("pipe").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  ASSERT_TRUE(write_output_file(path("pipe"), kBytes));
  char back[8] = {};
  EXPECT_EQ(::read(reader, back, sizeof back), 3);
  ::close(reader);
  EXPECT_EQ(std::string(back, 3), std::string("a\0b", 3));
  EXPECT_TRUE(fs::is_fifo(path("pipe")));
}

TEST_F(OutputFile, ADeviceIsWrittenThroughNotReplaced) {
  if (::geteuid() != 0) GTEST_SKIP() << "mknod of a null device needs root";
  // A private node of the null device: the real /dev/null is never at risk here.
  ASSERT_EQ(::mknod(path("null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  ASSERT_TRUE(write_output_file(path("null"), kBytes));
  EXPECT_TRUE(fs::is_character_file(path("null")));
}

TEST_F(OutputFile, AWritableFileInADirectoryWeMayNotWriteIsRewrittenInPlace) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a child as another user";
  std::ofstream(path("shared.png")) << "old";
  ASSERT_EQ(::chmod(path("shared.png").c_str(), 0666), 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  fs::permissions(dir_.parent_path(), fs::perms::others_exec, fs::perm_options::add);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // As nobody: the directory is root's, the file is writable by all.
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) ::_exit(2);
    ::_exit(write_output_file(path("shared.png"), kBytes) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(contents(path("shared.png")), std::string("a\0b", 3));
}

}  // namespace
}  // namespace memprof::report
