#include "core/track/aggregate.h"

#include <gtest/gtest.h>

namespace memprof::track {
namespace {

TEST(Aggregate, GroupsNamesMergesAndSorts) {
  SiteTable sites;
  uint32_t a3 = sites.intern("a.rb", 3);
  uint32_t b1 = sites.intern("b.rb", 1);
  std::vector<Sample> samples = {
      {a3, 100, 40}, {a3, 100, 40}, {a3, 200, 80}, {b1, 100, 40}, {b1, 100, 40},
      {b1, 300, 10},  // class 300 is also named "String": merged with 100 at b.rb:1
  };
  auto groups = group_samples(samples);
  EXPECT_EQ(groups.size(), 4u);
  auto named = name_groups(groups, sites, [](uint64_t key) -> std::string {
    return key == 200 ? "Array" : "String";
  });
  ASSERT_EQ(named.size(), 3u);
  EXPECT_EQ(stats_line(named[0]), "      3 b.rb:1:String");
  EXPECT_EQ(named[0].bytes, 90u);
  EXPECT_EQ(stats_line(named[1]), "      2 a.rb:3:String");
  EXPECT_EQ(stats_line(named[2]), "      1 a.rb:3:Array");
}

TEST(Aggregate, TiesSortByFileLineClass) {
  SiteTable sites;
  std::vector<Sample> samples = {
      {sites.intern("z.rb", 1), 1, 0}, {sites.intern("a.rb", 9), 1, 0},
      {sites.intern("a.rb", 2), 2, 0}, {sites.intern("a.rb", 2), 1, 0}};
  auto named = name_groups(group_samples(samples), sites,
                           [](uint64_t key) { return key == 1 ? std::string("B") : "A"; });
  ASSERT_EQ(named.size(), 4u);
  EXPECT_EQ(stats_line(named[0]), "      1 a.rb:2:A");
  EXPECT_EQ(stats_line(named[1]), "      1 a.rb:2:B");
  EXPECT_EQ(stats_line(named[2]), "      1 a.rb:9:B");
  EXPECT_EQ(stats_line(named[3]), "      1 z.rb:1:B");
}

TEST(Aggregate, WideCountsKeepTheFormat) {
  NamedGroup g{"x.rb", 12, "Hash", 12345678, 0};
  EXPECT_EQ(stats_line(g), "12345678 x.rb:12:Hash");
}

}  // namespace
}  // namespace memprof::track
