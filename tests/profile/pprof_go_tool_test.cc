// What `go tool pprof` (Debian's golang-go) makes of memprof's pprof files: the reference reader
// of the format, so a field number or a unit wrong here shows as a failure or wrong totals.
#include <gtest/gtest.h>

#include <unistd.h>

#include <initializer_list>
#include <string_view>

#include "profile/pprof_writer.h"
#include "sample_profiles.h"
#include "support/command_runner.h"

namespace memprof::profile {
namespace {

using memprof::testing::run_command;
using memprof::testing::TempDir;

class GoToolPprof : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/go", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/go (golang-go)";
  }

  // `go tool pprof ARGS... FILE` with a home and build cache of its own.
  std::string pprof(const StackProfile& profile, std::vector<std::string> arguments) {
    const std::string file = dir_.file("heap.pb.gz");
    const auto written = write_pprof(file, profile);
    EXPECT_TRUE(written.ok()) << written.message();
    std::vector<std::string> argv = {"env", "HOME=" + dir_.path(),
                                     "GOCACHE=" + dir_.file("gocache")};
    for (const char* word : {"/usr/bin/go", "tool", "pprof"}) argv.push_back(word);
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    argv.push_back(file);
    const auto run = run_command(argv);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return run.out;
  }

  TempDir dir_;
};

// Each of `parts` somewhere in pprof's `output`.
void expect_all_in(const std::string& output, std::initializer_list<std::string_view> parts) {
  for (std::string_view part : parts) {
    EXPECT_NE(output.find(part), std::string::npos) << "no \"" << part << "\" in\n" << output;
  }
}

TEST_F(GoToolPprof, TopShowsTheLeakInUse) {
  expect_all_in(pprof(testing::leak_profile(), {"-top", "-sample_index=inuse_space"}),
                {"Type: inuse_space\n", "Showing nodes accounting for 400kB, 100% of 400kB total\n",
                 "     400kB   100%   100%      400kB   100%  leak_it\n",
                 "         0     0%   100%      400kB   100%  main\n",
                 "         0     0%   100%      400kB   100%  ruby_line\n"});
}

TEST_F(GoToolPprof, InuseSpaceIsTheDefault) {
  expect_all_in(pprof(testing::leak_profile(), {"-top"}),
                {"Type: inuse_space\n", "of 400kB total"});
}

TEST_F(GoToolPprof, TopCountsObjectsAndShowsUnsymbolizedFramesByLibrary) {
  expect_all_in(
      pprof(testing::shop_profile(), {"-top", "-nodefraction=0", "-sample_index=alloc_objects"}),
      {"File: ruby3.1\n",  // the first mapping
       "Type: alloc_objects\n", "Showing nodes accounting for 5402, 100% of 5402 total\n",
       "      5000 92.56% 92.56%       5000 92.56%  ruby_xmalloc\n",
       "       300  5.55% 98.11%        300  5.55%  [libfoo.so]\n",
       "       100  1.85%   100%        100  1.85%  leak_it\n",
       "         0     0%   100%       5402   100%  main\n",
       "         0     0%   100%       5100 94.41%  ruby_line\n"});
}

TEST_F(GoToolPprof, RawShowsTheSamplesAndTheirLocations) {
  expect_all_in(pprof(testing::leak_profile(), {"-raw"}),
                {"Comment: memprof native -p 4242\n", "PeriodType: space bytes\nPeriod: 1\n",
                 "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes",
                 "        100     409600        100     409600: 1 2 3 \n",
                 "     1: 0x7f0000201000 M=", " leak_it leak.c:12 ", "     3: 0x555555555100 M=",
                 " main main.c:38 ", "/usr/lib/libleak.so  [FN][FL][LN]"});
}

}  // namespace
}  // namespace memprof::profile
