// `memprof html` rendered by headless Chromium: the numbers in the page are written by its
// script from the embedded data, so these checks fail if the script breaks, the data is not
// valid JSON, or the heap map PNG does not decode in a browser.
#include <gtest/gtest.h>

#include <regex>

#include "browser.h"
#include "support/command_runner.h"
#include "png_decode.h"

namespace memprof::report {
namespace {

using testing::element_by_id;
using testing::render_dom;
using memprof::testing::run_command;
using memprof::testing::TempDir;

const std::string kMemprof = MEMPROF_BINARY;
const std::string kFixture = std::string(FIXTURE_DIR) + "/small_heap.json";

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(HtmlInChromium, ShowsTheFixtureNumbers) {
  TempDir dir;
  const std::string html = dir.file("report.html");
  const auto run = run_command({kMemprof, "html", kFixture, "-o", html});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  const std::string written = memprof::testing::read_file(html);
  // The page's size with thousands separators, as every count memprof prints.
  std::string page_bytes = std::to_string(written.size());
  ASSERT_GT(page_bytes.size(), 3u);
  for (auto at = static_cast<std::ptrdiff_t>(page_bytes.size()) - 3; at > 0; at -= 3) page_bytes.insert(at, ",");
  EXPECT_TRUE(run.out.starts_with(html + ": " + page_bytes + " bytes; 12 objects, 4 treemap groups, heap map "))
      << run.out;

  const auto browser = render_dom(html);
  ASSERT_EQ(browser.exit_code, 0) << browser.err;
  const std::string& dom = browser.out;
  EXPECT_EQ(element_by_id(dom, "dump-name", "id").text, kFixture);
  const auto total = element_by_id(dom, "total-count", "data-value");
  EXPECT_EQ(total.attribute, "12");  // summed in the browser from the per-type rows
  EXPECT_EQ(total.text, "12");
  const auto memsize = element_by_id(dom, "total-memsize", "data-value");
  EXPECT_EQ(memsize.attribute, "1620");
  EXPECT_EQ(memsize.text, "1.6 kB");  // SI units, as the text report
  EXPECT_EQ(element_by_id(dom, "reachable-count", "data-value").text, "11");
  const auto reachable = element_by_id(dom, "reachable-memsize", "data-value");
  EXPECT_EQ(reachable.attribute, "1580");
  EXPECT_EQ(reachable.text, "1.6 kB");
  EXPECT_EQ(element_by_id(dom, "machine-context-only", "data-value").text, "1 object, 40 B");
  EXPECT_EQ(element_by_id(dom, "consistency", "id").text, "");

  EXPECT_EQ(element_by_id(dom, "by-type", "data-rows").attribute, "6");
  EXPECT_EQ(element_by_id(dom, "by-class", "data-rows").attribute, "6");
  // One row per top of the dominator tree (nested objects are inside their top's retained size).
  EXPECT_EQ(element_by_id(dom, "top-retained", "data-rows").attribute, "4");
  // The dominator list, largest retained first: Foo's class, then the array.
  const std::regex first_rows(
      "<table id=\"top-retained\".*?"
      "<a href=\"#object/0x7f1200000168\">0x7f1200000168</a></td>.*?"
      "<td>600 B</td><td>600 B</td>.*?"
      "<a href=\"#object/0x7f1200000028\">0x7f1200000028</a></td>.*?"
      "<td>80 B</td><td>500 B</td>");
  EXPECT_TRUE(std::regex_search(dom, first_rows));

  // Treemap: four boxes that together are the reachable heap.
  EXPECT_EQ(element_by_id(dom, "treemap", "data-rects").attribute, "4");
  EXPECT_EQ(count_of(dom, "<rect "), 4u);
  const auto treemap_total = element_by_id(dom, "treemap-total", "data-value");
  EXPECT_EQ(treemap_total.attribute, "1580");
  EXPECT_EQ(treemap_total.text, "1.6 kB");
  EXPECT_EQ(count_of(dom, "data-retained=\"600\""), 1u);
  EXPECT_EQ(count_of(dom, "data-retained=\"40\""), 1u);

  // The embedded heap map decoded in the browser to the size `memprof heapmap` draws.
  const std::string png = dir.file("heap.png");
  ASSERT_EQ(run_command({kMemprof, "heapmap", kFixture, "-o", png}).exit_code, 0);
  const auto image = testing::decode_png_file(png);
  ASSERT_EQ(image.error, "");
  const auto size = element_by_id(dom, "heapmap-size", "data-value");
  EXPECT_EQ(size.attribute, std::to_string(image.width));
  EXPECT_EQ(size.text, std::to_string(image.width) + " x " + std::to_string(image.height) +
                           " pixels");
  EXPECT_EQ(count_of(dom, "data-rendered=\"yes\""), 1u);
}

TEST(HtmlInChromium, ShortListsKeepEveryTypeRow) {
  TempDir dir;
  const std::string html = dir.file("report.html");
  const auto run = run_command({kMemprof, "html", kFixture, "-o", html, "--top", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto browser = render_dom(html);
  ASSERT_EQ(browser.exit_code, 0) << browser.err;
  // --top is raised to the number of object types, so the page's own sum still matches.
  EXPECT_EQ(element_by_id(browser.out, "by-type", "data-rows").attribute, "6");
  EXPECT_EQ(element_by_id(browser.out, "total-count", "data-value").attribute, "12");
  EXPECT_EQ(element_by_id(browser.out, "consistency", "id").text, "");
}

TEST(HtmlInChromium, HostileClassNamesStayText) {
  TempDir dir;
  std::string dump = memprof::testing::read_file(kFixture);
  const std::string hostile = "Foo</script><script>document.body.dataset.rendered='hacked'</script>";
  const size_t at = dump.find("\"name\":\"Foo\"");
  ASSERT_NE(at, std::string::npos);
  dump.replace(at, 12, "\"name\":\"" + hostile + "\"");
  memprof::testing::write_file(dir.file("hostile.json"), dump);
  const std::string html = dir.file("report.html");
  const auto run = run_command({kMemprof, "html", dir.file("hostile.json"), "-o", html});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto browser = render_dom(html);
  ASSERT_EQ(browser.exit_code, 0) << browser.err;
  EXPECT_EQ(count_of(browser.out, "data-rendered=\"yes\""), 1u);
  EXPECT_EQ(count_of(browser.out, "hacked\"></script>"), 0u);
  // The name shows up as text (serialized with &lt; by Chromium) wherever the page names the
  // class or its instance: the by-class table, the class object in the dominator list, the class
  // object and its instance in the biggest objects, and the instance among the most referenced.
  EXPECT_EQ(count_of(browser.out, ">Foo&lt;/script&gt;&lt;script&gt;document.body.dataset"), 5u);
}

}  // namespace
}  // namespace memprof::report
