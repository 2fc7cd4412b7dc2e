#include "profile/call_tree.h"

#include <gtest/gtest.h>

#include "sample_profiles.h"

namespace memprof::profile {
namespace {

constexpr size_t kAllocObjects = static_cast<size_t>(SampleValue::kAllocObjects);
constexpr size_t kInuseSpace = static_cast<size_t>(SampleValue::kInuseSpace);

// "root/main/ruby_line" for a node.
std::string path_of(const CallTree& tree, uint32_t node) {
  std::string path;
  for (; node != 0; node = tree.nodes[node].parent) {
    path = "/" + tree.frames[tree.nodes[node].frame].label + path;
  }
  return "root" + path;
}

TEST(CallTree, SharedPrefixesAreOneNodeWithTheSums) {
  auto tree = build_call_tree(testing::shop_profile());
  ASSERT_TRUE(tree.ok()) << tree.message();
  std::vector<std::string> paths;
  for (uint32_t i = 0; i < tree->nodes.size(); ++i) {
    paths.push_back(path_of(*tree, i) + " " + std::to_string(tree->nodes[i].totals[kAllocObjects]) +
                    " " + std::to_string(tree->nodes[i].totals[kInuseSpace]));
  }
  EXPECT_EQ(paths, (std::vector<std::string>{
                       "root 5402 458752",
                       "root/main 5402 458752",
                       "root/main/ruby_line 5100 450560",
                       "root/main/ruby_line/leak_it 100 409600",
                       "root/main/ruby_line/rb_str_new 5000 40960",
                       "root/main/ruby_line/rb_str_new/ruby_xmalloc 5000 40960",
                       "root/main/other_work 302 8192",
                       "root/main/other_work/0x7f00dead0000 [libfoo.so] 300 0",
                       "root/main/other_work/<b>bold</b>;</script> 2 8192",
                   }));
  const TreeFrame& unknown = tree->frames[tree->nodes[7].frame];
  EXPECT_EQ(unknown.library, "/usr/lib/libfoo.so");
  EXPECT_FALSE(unknown.symbolized);
  EXPECT_TRUE(tree->frames[tree->nodes[1].frame].symbolized);
}

TEST(CallTree, FramesOfOneFunctionMergeWithAllTheirLines) {
  StackProfile profile;
  profile.frames = {{.function = "main", .file = "main.c", .line = 5},
                    {.function = "grow", .library = "liba.so", .file = "grow.c", .line = 20},
                    {.function = "grow", .library = "liba.so", .file = "grow.c", .line = 10},
                    {.function = "grow", .library = "libb.so", .file = "other.c"},
                    {.function = "grow", .library = "liba.so", .file = "grow.c", .line = 10}};
  profile.samples = {{.frames = {1, 0}, .alloc_objects = 1},
                     {.frames = {2, 0}, .alloc_objects = 2},
                     {.frames = {4, 0}, .alloc_objects = 4},
                     {.frames = {3, 0}, .alloc_objects = 8}};
  auto tree = build_call_tree(profile);
  ASSERT_TRUE(tree.ok()) << tree.message();
  ASSERT_EQ(tree->nodes.size(), 4u);  // root, main, grow in liba.so, grow in libb.so
  EXPECT_EQ(tree->nodes[2].totals[kAllocObjects], 7);
  EXPECT_EQ(tree->frames[tree->nodes[2].frame].locations,
            (std::vector<std::string>{"grow.c:10", "grow.c:20"}));
  EXPECT_EQ(tree->nodes[3].totals[kAllocObjects], 8);
  EXPECT_EQ(tree->frames[tree->nodes[3].frame].locations, std::vector<std::string>{"other.c"});
}

TEST(CallTree, RecursionIsADeeperNode) {
  StackProfile profile;
  profile.frames = {{.function = "walk"}};
  profile.samples = {{.frames = {0, 0, 0}, .inuse_space = 9}};
  auto tree = build_call_tree(profile);
  ASSERT_TRUE(tree.ok()) << tree.message();
  ASSERT_EQ(tree->nodes.size(), 4u);
  EXPECT_EQ(path_of(*tree, 3), "root/walk/walk/walk");
  EXPECT_EQ(tree->frames.size(), 1u);
}

}  // namespace
}  // namespace memprof::profile
