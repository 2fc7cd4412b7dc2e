#include "profile/stack_profile.h"

#include <gtest/gtest.h>

namespace memprof::profile {
namespace {

TEST(StackProfile, SampleValuesHaveGoHeapProfileNames) {
  for (SampleValue value : kSampleValues) {
    EXPECT_EQ(parse_sample_value(sample_value_name(value)), value);
  }
  EXPECT_EQ(sample_value_name(SampleValue::kInuseSpace), "inuse_space");
  EXPECT_TRUE(is_bytes(SampleValue::kAllocSpace));
  EXPECT_FALSE(is_bytes(SampleValue::kInuseObjects));
  EXPECT_EQ(parse_sample_value("inuse"), std::nullopt);
  const Sample sample{.alloc_objects = 1, .alloc_space = 2, .inuse_objects = 3, .inuse_space = 4};
  EXPECT_EQ(sample.value(SampleValue::kAllocObjects), 1);
  EXPECT_EQ(sample.value(SampleValue::kInuseSpace), 4);
}

TEST(StackProfile, LabelOfAFrameWithoutFunctionIsWhatIsKnown) {
  EXPECT_EQ(frame_label({.function = "leak_it", .library = "/lib/libleak.so"}), "leak_it");
  EXPECT_EQ(frame_label({.library = "/usr/lib/libfoo.so", .address = 0x7f00dead0000}),
            "0x7f00dead0000 [libfoo.so]");
  EXPECT_EQ(frame_label({.address = 0x1234}), "0x1234");
  EXPECT_EQ(frame_label({.library = "libfoo.so"}), "[libfoo.so]");
  EXPECT_EQ(frame_label({}), "[unknown]");
}

TEST(StackProfile, CheckNamesTheFirstBadSample) {
  StackProfile profile;
  profile.frames.resize(2);
  profile.samples = {{.frames = {1, 0}, .inuse_space = 5}, {.frames = {0, 2}}};
  EXPECT_EQ(check_stack_profile(profile).message(),
            "sample 1: frame index 2 is out of range (2 frames)");
  profile.samples[1] = {.frames = {0}, .alloc_space = -8};
  EXPECT_EQ(check_stack_profile(profile).message(), "sample 1: alloc_space is negative (-8)");
  profile.samples.pop_back();
  EXPECT_TRUE(check_stack_profile(profile).ok());
}

}  // namespace
}  // namespace memprof::profile
