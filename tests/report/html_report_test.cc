#include <gtest/gtest.h>

#include "heap/dominators.h"
#include "heap/graph.h"
#include "heap/loader.h"
#include "report/base64.h"
#include "report/html_page.h"
#include "report/retained_groups.h"

namespace memprof::report {
namespace {

std::string b64(std::string_view text) {
  return base64_encode({reinterpret_cast<const unsigned char*>(text.data()), text.size()});
}

TEST(Base64, Rfc4648Vectors) {
  EXPECT_EQ(b64(""), "");
  EXPECT_EQ(b64("f"), "Zg==");
  EXPECT_EQ(b64("fo"), "Zm8=");
  EXPECT_EQ(b64("foo"), "Zm9v");
  EXPECT_EQ(b64("foob"), "Zm9vYg==");
  EXPECT_EQ(b64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(b64("foobar"), "Zm9vYmFy");
  const unsigned char high[] = {0xff, 0xfe, 0x00};
  EXPECT_EQ(base64_encode(high), "//4A");
}

TEST(HtmlPage, EscapesTextAndKeepsJsonInsideItsScriptElement) {
  EXPECT_EQ(html_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(script_safe_json(R"({"name":"</script><!--"})"),
            R"({"name":"\u003c/script>\u003c!--"})");
}

TEST(HtmlPage, IsSelfContained) {
  const std::string page = html_page({.title = "t<", .analysis_json = "{}", .report_json = "{}",
                                      .heapmap_base64 = "QUJD"});
  EXPECT_NE(page.find("<title>memprof: t&lt;</title>"), std::string::npos);
  EXPECT_NE(page.find("src=\"data:image/png;base64,QUJD\""), std::string::npos);
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
  // The only "http" in the page: the CSP meta's http-equiv and the SVG namespace name.
  size_t count = 0;
  for (size_t at = page.find("http"); at != std::string::npos; at = page.find("http", at + 1)) {
    const std::string_view rest = std::string_view(page).substr(at);
    EXPECT_TRUE(rest.starts_with("http-equiv") || rest.starts_with("http://www.w3.org/2000/svg\""))
        << rest.substr(0, 40);
    ++count;
  }
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("<script src"), std::string::npos);
}

TEST(RetainedGroups, PartitionTheReachableHeapByTopLevelClass) {
  auto heap = heap::load_heap(std::string(FIXTURE_DIR) + "/small_heap.json");
  ASSERT_TRUE(heap) << heap.message();
  const auto graph = heap::Graph::build(*heap);
  const auto tree = heap::DominatorTree::compute(graph, *heap);
  // Tops of the dominator tree: the class Foo (600), the array (80 + everything below it: 500),
  // the module (400 + its string: 440) and the string only machine_context holds (40).
  auto groups = retained_by_top_level_class(*heap, tree, 10);
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].name, "(CLASS)");
  EXPECT_EQ(groups[0].retained, 600u);
  EXPECT_EQ(groups[1].name, "(ARRAY)");
  EXPECT_EQ(groups[1].retained, 500u);
  EXPECT_EQ(groups[2].name, "(MODULE)");
  EXPECT_EQ(groups[2].retained, 440u);
  EXPECT_EQ(groups[3].name, "(STRING)");
  EXPECT_EQ(groups[3].retained, 40u);
  EXPECT_EQ(groups[3].objects, 1u);
  EXPECT_EQ(tree.retained[tree.super_root], 1580u);

  groups = retained_by_top_level_class(*heap, tree, 2);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[1].name, "(3 more classes)");
  EXPECT_EQ(groups[1].retained, 980u);
  EXPECT_EQ(groups[1].objects, 3u);
}

}  // namespace
}  // namespace memprof::report
