#!/usr/bin/python3
"""The flame graph page (profile/flame_graph_html.h) clicked through in headless Chromium
(Debian's chromium-driver and python3-selenium): the total, zooming into a frame and back, the
details of a hovered frame, switching the value shown, and the search.

    flame_graph_click_test.py WRITE_FLAME_GRAPH_PAGE

The page is testing::shop_profile() (tests/profile/sample_profiles.h).
"""
import os
import subprocess
import sys
import unittest

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from headless_chromium import PageTestCase  # noqa: E402

WRITE_PAGE = sys.argv[1]


class FlameGraph(PageTestCase):
    chromium_arguments = ["--window-size=1200,800"]

    @classmethod
    def write_page(cls, path):
        subprocess.run([WRITE_PAGE, path], check=True, capture_output=True)

    def element(self, id):
        return self.browser.find_element(By.ID, id)

    def frame(self, name):
        return self.browser.find_element(By.CSS_SELECTOR, '#chart .frame[data-name="%s"]' % name)

    def frame_names(self):
        return sorted(f.get_attribute("data-name")
                      for f in self.browser.find_elements(By.CSS_SELECTOR, "#chart .frame"))

    def width(self, element):
        return element.rect["width"]

    def details(self):
        return [self.element("detail-" + part).text
                for part in ["name", "library", "location", "value", "percent", "self"]]

    def test_shows_the_total_of_the_default_value(self):
        self.assertEqual(Select(self.element("value")).first_selected_option.get_attribute("value"),
                         "inuse_space")
        self.assertEqual(self.element("total").text, "458.8 kB (458,752 B)")
        self.assertEqual(self.element("total").get_attribute("data-value"), "458752")
        # Nothing of the unknown frame is in use: it is not drawn.
        self.assertEqual(self.frame_names(), ["<b>bold</b>;</script>", "all", "leak_it", "main",
                                              "other_work", "rb_str_new", "ruby_line", "ruby_xmalloc"])
        chart = self.width(self.element("chart"))
        self.assertAlmostEqual(self.width(self.frame("all")), chart, delta=1)
        self.assertAlmostEqual(self.width(self.frame("leak_it")), chart * 409600 / 458752, delta=1)
        self.assertEqual(self.browser.find_element(By.TAG_NAME, "h1").text, "shop </script> server")

    def test_click_zooms_into_a_frame_and_back(self):
        chart = self.element("chart")
        self.frame("ruby_line").click()
        self.assertEqual([b.text for b in self.element("breadcrumb").find_elements(By.TAG_NAME, "button")],
                         ["all", "main", "ruby_line"])
        zoomed = self.frame("ruby_line")
        self.assertEqual(chart.get_attribute("data-zoom"), zoomed.get_attribute("data-node"))
        self.assertAlmostEqual(self.width(zoomed), self.width(chart), delta=1)
        self.assertAlmostEqual(self.width(self.frame("leak_it")),
                               self.width(chart) * 409600 / 450560, delta=1)
        self.assertIn("ancestor", self.frame("main").get_attribute("class"))
        self.assertNotIn("other_work", self.frame_names())  # outside the zoomed frame
        self.assertEqual(self.details(), ["ruby_line", "/usr/lib/libruby.so.3.1", "vm.c:2100",
                                          "450.6 kB (450,560 B)", "98.21% of total", "self 0 B"])

        # One level up through the breadcrumb, then all the way back.
        self.element("breadcrumb").find_element(By.XPATH, "button[2]").click()
        self.assertEqual(chart.get_attribute("data-zoom"), self.frame("main").get_attribute("data-node"))
        self.assertIn("other_work", self.frame_names())
        self.frame("leak_it").click()
        self.assertEqual(self.details()[:5], ["leak_it", "/usr/lib/libleak.so", "leak.c:12",
                                              "409.6 kB (409,600 B)", "89.29% of total"])
        self.assertFalse(self.element("reset").get_attribute("disabled"))
        self.element("reset").click()
        self.assertEqual(chart.get_attribute("data-zoom"), "0")
        self.assertEqual(self.element("reset").get_attribute("disabled"), "true")
        self.assertEqual([b.text for b in self.element("breadcrumb").find_elements(By.TAG_NAME, "button")],
                         ["all"])

    def test_hover_shows_a_frame_in_full(self):
        ActionChains(self.browser).move_to_element(self.frame("rb_str_new")).perform()
        self.assertEqual(self.details(), ["rb_str_new", "/usr/lib/libruby.so.3.1", "string.c:900",
                                          "41.0 kB (40,960 B)", "8.93% of total", "self 0 B"])
        # The name the profile gave, as text: no markup made of it.
        ActionChains(self.browser).move_to_element(self.frame("<b>bold</b>;</script>")).perform()
        self.assertEqual(self.details()[:2], ["<b>bold</b>;</script>", "/usr/lib/libweird.so"])
        self.assertEqual(self.element("details").find_elements(By.TAG_NAME, "b"), [])

    def test_value_selector_changes_the_numbers(self):
        Select(self.element("value")).select_by_value("alloc_objects")
        self.assertEqual(self.body("value"), "alloc_objects")
        self.assertEqual(self.element("total").text, "5,402 objects")
        self.assertIn("0x7f00dead0000 [libfoo.so]", self.frame_names())  # allocated, not in use
        chart = self.width(self.element("chart"))
        self.assertAlmostEqual(self.width(self.frame("ruby_xmalloc")), chart * 5000 / 5402, delta=1)
        unknown = "0x7f00dead0000 [libfoo.so]"
        self.frame(unknown).click()
        self.assertEqual(self.details(), [unknown, "/usr/lib/libfoo.so", "", "300 objects",
                                          "5.55% of total", ""])
        # Nothing of that frame is in use: back to the whole profile rather than an empty chart.
        Select(self.element("value")).select_by_value("inuse_objects")
        self.assertEqual(self.element("chart").get_attribute("data-zoom"), "0")
        self.assertEqual(self.element("total").text, "112 objects")

    def test_search_highlights_matching_frames(self):
        search = self.element("search")
        search.send_keys("XMALLOC")
        self.assertEqual([f.get_attribute("data-name")
                          for f in self.browser.find_elements(By.CSS_SELECTOR, "#chart .frame.match")],
                         ["ruby_xmalloc"])
        self.assertEqual(self.element("matched").text, "matched: 41.0 kB, 8.93% of total")
        # By library: every libruby frame, a match inside a match counted once.
        search.clear()
        search.send_keys("libruby")
        self.assertEqual(sorted(f.get_attribute("data-name") for f in
                                self.browser.find_elements(By.CSS_SELECTOR, "#chart .frame.match")),
                         ["other_work", "rb_str_new", "ruby_line", "ruby_xmalloc"])
        self.assertEqual(self.element("matched").get_attribute("data-value"), "458752")
        self.assertEqual(self.element("matched").text, "matched: 458.8 kB, 100.00% of total")
        search.send_keys(Keys.CONTROL, "a")
        search.send_keys(Keys.DELETE)
        self.assertEqual(self.browser.find_elements(By.CSS_SELECTOR, "#chart .frame.match"), [])
        self.assertEqual(self.element("matched").text, "")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
