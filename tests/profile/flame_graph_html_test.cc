#include "profile/flame_graph_html.h"

#include <gtest/gtest.h>

#include "sample_profiles.h"
#include "support/command_runner.h"

namespace memprof::profile {
namespace {

std::string page_of(const StackProfile& profile, SampleValue shown = SampleValue::kInuseSpace) {
  auto page = flame_graph_html(profile, shown);
  EXPECT_TRUE(page.ok()) << page.message();
  return page.ok() ? *page : "";
}

// The text between the first `begin` and the `end` after it.
std::string between(const std::string& text, const std::string& begin, const std::string& end) {
  const size_t from = text.find(begin);
  if (from == std::string::npos) return "";
  const size_t to = text.find(end, from + begin.size());
  return text.substr(from + begin.size(), to == std::string::npos ? 0 : to - from - begin.size());
}

TEST(FlameGraphHtml, OnePageWithNothingToFetch) {
  const std::string page = page_of(testing::shop_profile());
  EXPECT_TRUE(page.starts_with("<!DOCTYPE html>"));
  EXPECT_TRUE(page.ends_with("</html>\n"));
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
  for (const char* fetch : {"src=", "href=", "http:", "https:", "@import", "url("}) {
    EXPECT_EQ(page.find(fetch), std::string::npos) << fetch;
  }
}

TEST(FlameGraphHtml, NamesCannotEndTheDataOrTheTitle) {
  const std::string page = page_of(testing::shop_profile());
  // Three </script>: the data's, the script's, and nothing from the profile.
  size_t closes = 0;
  for (size_t at = page.find("</script>"); at != std::string::npos;
       at = page.find("</script>", at + 1)) {
    ++closes;
  }
  EXPECT_EQ(closes, 2u);
  EXPECT_NE(page.find("<title>memprof: shop &lt;/script&gt; server</title>"), std::string::npos);
  EXPECT_NE(page.find("<h1>shop &lt;/script&gt; server</h1>"), std::string::npos);
  const std::string data = between(page, "id=\"profile-data\">", "</script>");
  EXPECT_NE(data.find("\"label\":\"\\u003cb>bold\\u003c/b>;\\u003c/script>\""), std::string::npos)
      << data;
}

TEST(FlameGraphHtml, DataIsTheCallTree) {
  const std::string data = between(page_of(testing::leak_profile(), SampleValue::kAllocObjects),
                                   "id=\"profile-data\">", "</script>");
  EXPECT_EQ(
      data,
      "{\"title\":\"memprof native -p 4242\",\"time_nanos\":1700000000000000000,"
      "\"duration_nanos\":10000000000,\"shown\":\"alloc_objects\","
      "\"values\":[{\"name\":\"alloc_objects\",\"bytes\":false},"
      "{\"name\":\"alloc_space\",\"bytes\":true},{\"name\":\"inuse_objects\",\"bytes\":false},"
      "{\"name\":\"inuse_space\",\"bytes\":true}],"
      "\"frames\":[{\"label\":\"main\",\"library\":\"/usr/bin/ruby3.1\","
      "\"locations\":[\"main.c:38\"],\"symbolized\":true},"
      "{\"label\":\"ruby_line\",\"library\":\"/usr/lib/libruby.so.3.1\","
      "\"locations\":[\"vm.c:2100\"],\"symbolized\":true},"
      "{\"label\":\"leak_it\",\"library\":\"/usr/lib/libleak.so\","
      "\"locations\":[\"leak.c:12\"],\"symbolized\":true}],"
      "\"nodes\":[[-1,-1,100,409600,100,409600],[0,0,100,409600,100,409600],"
      "[1,1,100,409600,100,409600],[2,2,100,409600,100,409600]]}");
}

TEST(FlameGraphHtml, WrittenToAFileOrAnError) {
  memprof::testing::TempDir dir;
  const std::string path = dir.file("flame.html");
  ASSERT_TRUE(write_flame_graph_html(path, testing::leak_profile()).ok());
  EXPECT_EQ(memprof::testing::read_file(path), page_of(testing::leak_profile()));
  StackProfile bad = testing::leak_profile();
  bad.samples[0].frames = {7};
  EXPECT_EQ(write_flame_graph_html(path, bad).message(),
            "sample 0: frame index 7 is out of range (3 frames)");
}

}  // namespace
}  // namespace memprof::profile
