// trace/prototype_files.h: where prototype files are looked for, in which order they override
// each other, and what a missing or broken file does.
#include "trace/prototype_files.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

namespace memprof::trace {
namespace {

namespace fs = std::filesystem;

// A scratch directory standing for /, $HOME and $XDG_CONFIG_HOME, removed afterwards.
class PrototypeFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "memprof-trace-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    locations_ = {root_ + "/home", root_ + "/home/.config", root_ + "/system"};
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  std::string write(const std::string& relative, std::string_view text) {
    fs::path path = fs::path(root_) / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }

  std::string root_;
  ConfigLocations locations_;
};

TEST_F(PrototypeFilesTest, ListsSystemFilesFirstAndTheUsersLast) {
  write("system/usr/share/ltrace/libc.so.conf", "");
  write("system/usr/share/ltrace/libc.so-types.conf", "");
  write("system/usr/share/ltrace/README", "");
  write("home/.config/ltrace/mine.conf", "");
  write("home/.ltrace/old.conf", "");
  EXPECT_EQ(default_prototype_files(locations_),
            (std::vector<std::string>{
                root_ + "/system/usr/share/ltrace/libc.so-types.conf",
                root_ + "/system/usr/share/ltrace/libc.so.conf",
                root_ + "/system/etc/ltrace.conf",
                root_ + "/home/.config/ltrace/mine.conf",
                root_ + "/home/.ltrace/old.conf",
                root_ + "/home/.ltrace.conf",
            }));
}

TEST_F(PrototypeFilesTest, WithoutAHomeOnlySystemFilesAreListed) {
  EXPECT_EQ(default_prototype_files({"", "", locations_.system_root}),
            std::vector<std::string>{root_ + "/system/etc/ltrace.conf"});
}

// Puts an environment variable back as it was.
class ScopedEnvironment {
 public:
  explicit ScopedEnvironment(const char* name) : name_(name) {
    const char* value = std::getenv(name);
    if (value != nullptr) saved_ = value;
  }
  ~ScopedEnvironment() {
    if (saved_) {
      ::setenv(name_, saved_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

TEST_F(PrototypeFilesTest, TheEnvironmentGivesTheLocations) {
  ScopedEnvironment keep_home("HOME");
  ScopedEnvironment keep_xdg("XDG_CONFIG_HOME");
  ASSERT_EQ(::setenv("HOME", "/home/someone", 1), 0);
  ASSERT_EQ(::unsetenv("XDG_CONFIG_HOME"), 0);
  ConfigLocations locations = config_locations_from_environment();
  EXPECT_EQ(locations.home, "/home/someone");
  EXPECT_EQ(locations.xdg_config_home, "/home/someone/.config");
  EXPECT_EQ(locations.system_root, "");
  ASSERT_EQ(::setenv("XDG_CONFIG_HOME", "/elsewhere", 1), 0);
  EXPECT_EQ(config_locations_from_environment().xdg_config_home, "/elsewhere");
}

TEST_F(PrototypeFilesTest, LaterFilesOverrideAndSeeEarlierTypedefs) {
  std::string system = write("system/etc/ltrace.conf", "typedef fd = int;\nint close(fd);\nvoid free(addr);\n");
  std::string user = write("home/.ltrace.conf", "long close(hex(fd));\n");
  auto loaded = load_prototype_files(default_prototype_files(locations_), MissingFile::kSkip);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_EQ(loaded->files_read, (std::vector<std::string>{system, user}));
  EXPECT_TRUE(loaded->problems.empty());
  EXPECT_EQ(loaded->prototypes.size(), 2u);
  EXPECT_EQ(describe(*loaded->prototypes.find("close")), "long close(hex(int))");
  EXPECT_EQ(loaded->prototypes.find("close")->origin, user + ":1");
}

TEST_F(PrototypeFilesTest, BadLinesAreProblemsNotFailures) {
  std::string file = write("protos.conf", "int ok(int);\nint f(strnig);\n");
  auto loaded = load_prototype_files({file}, MissingFile::kError);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_EQ(loaded->prototypes.size(), 1u);
  EXPECT_EQ(loaded->problems, std::vector<std::string>{file + ":2: unknown type 'strnig' in 'int f(strnig);'"});
}

TEST_F(PrototypeFilesTest, AMissingNamedFileIsAnError) {
  auto loaded = load_prototype_files({root_ + "/nowhere.conf"}, MissingFile::kError);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.message(), "cannot read prototype file " + root_ + "/nowhere.conf: No such file or directory");
}

TEST_F(PrototypeFilesTest, MissingDefaultFilesAreSkippedSilentlyButUnreadableOnesAreReported) {
  fs::create_directories(root_ + "/adirectory.conf");
  auto loaded = load_prototype_files({root_ + "/nowhere.conf", root_ + "/adirectory.conf"}, MissingFile::kSkip);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_TRUE(loaded->files_read.empty());
  EXPECT_EQ(loaded->problems,
            std::vector<std::string>{"cannot read prototype file " + root_ + "/adirectory.conf: Is a directory"});
}

}  // namespace
}  // namespace memprof::trace
