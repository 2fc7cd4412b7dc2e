#include "profile/collapsed_stacks.h"

#include <gtest/gtest.h>

#include "sample_profiles.h"
#include "support/command_runner.h"

namespace memprof::profile {
namespace {

std::string collapsed(const StackProfile& profile, SampleValue value) {
  auto text = collapsed_stacks(profile, value);
  EXPECT_TRUE(text.ok()) << text.message();
  return text.ok() ? *text : "";
}

TEST(CollapsedStacks, OneLinePerStackRootFirstSorted) {
  const StackProfile profile = testing::shop_profile();
  EXPECT_EQ(collapsed(profile, SampleValue::kAllocObjects),
            "main;other_work;0x7f00dead0000 [libfoo.so] 300\n"
            "main;other_work;<b>bold</b>:</script> 2\n"
            "main;ruby_line;leak_it 100\n"
            "main;ruby_line;rb_str_new;ruby_xmalloc 5000\n");
}

TEST(CollapsedStacks, StacksWithZeroOfTheValueAreLeftOut) {
  EXPECT_EQ(collapsed(testing::shop_profile(), SampleValue::kInuseSpace),
            "main;other_work;<b>bold</b>:</script> 8192\n"
            "main;ruby_line;leak_it 409600\n"
            "main;ruby_line;rb_str_new;ruby_xmalloc 40960\n");
  StackProfile nothing_in_use = testing::leak_profile();
  nothing_in_use.samples[0].inuse_objects = 0;
  EXPECT_EQ(collapsed(nothing_in_use, SampleValue::kInuseObjects), "");
}

TEST(CollapsedStacks, SeparatorsAndLineBreaksInNamesAreReplaced) {
  StackProfile profile;
  profile.frames = {{.function = "Foo::bar(std::map<int, int>) const"},
                    {.function = "a;b\nc\td\x7f"},
                    {.function = "caf\xc3\xa9"}};
  profile.samples = {{.frames = {0, 1, 2}, .alloc_space = 7}};
  EXPECT_EQ(collapsed(profile, SampleValue::kAllocSpace),
            "caf\xc3\xa9;a:b?c?d?;Foo::bar(std::map<int, int>) const 7\n");
}

TEST(CollapsedStacks, StacksThatReadTheSameAreOneLine) {
  StackProfile profile;
  // One function at two return addresses, and two libraries' functions of one name.
  profile.frames = {{.function = "main"},
                    {.function = "grow", .line = 10, .address = 0x1000},
                    {.function = "grow", .line = 20, .address = 0x1040},
                    {.function = "init", .library = "liba.so"},
                    {.function = "init", .library = "libb.so"}};
  profile.samples = {{.frames = {1, 0}, .alloc_objects = 3},
                     {.frames = {2, 0}, .alloc_objects = 4},
                     {.frames = {3, 0}, .alloc_objects = 5},
                     {.frames = {4, 0}, .alloc_objects = 6},
                     {.frames = {}, .alloc_objects = 1}};
  EXPECT_EQ(collapsed(profile, SampleValue::kAllocObjects),
            "[unknown] 1\nmain;grow 7\nmain;init 11\n");
}

TEST(CollapsedStacks, BadProfileIsAnError) {
  StackProfile profile = testing::leak_profile();
  profile.samples[0].frames.push_back(3);
  EXPECT_EQ(collapsed_stacks(profile, SampleValue::kAllocSpace).message(),
            "sample 0: frame index 3 is out of range (3 frames)");
}

TEST(CollapsedStacks, WrittenThroughATemporaryFile) {
  memprof::testing::TempDir dir;
  const std::string path = dir.file("leak.folded");
  ASSERT_TRUE(write_collapsed_stacks(path, testing::leak_profile(), SampleValue::kInuseSpace).ok());
  EXPECT_EQ(memprof::testing::read_file(path), "main;ruby_line;leak_it 409600\n");
  const auto failed = write_collapsed_stacks(dir.file("no/such/dir/x"), testing::leak_profile(),
                                             SampleValue::kInuseSpace);
  EXPECT_EQ(failed.message(),
            "cannot write " + dir.file("no/such/dir/x") + ": No such file or directory");
}

}  // namespace
}  // namespace memprof::profile
