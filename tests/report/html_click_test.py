#!/usr/bin/python3
"""`memprof html` clicked through in headless Chromium (Debian's chromium-driver and
python3-selenium): sorting a table by a column, a group's page with its objects, an object's page
with its references, retainers and path from a root, and back.

    html_click_test.py MEMPROF FIXTURE_DIR
"""
import os
import subprocess
import sys
import unittest

from selenium.webdriver.common.by import By

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from headless_chromium import PageTestCase  # noqa: E402

MEMPROF, FIXTURES = sys.argv[1], sys.argv[2]


def cells(table):
    return [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")]


class ClickThrough(PageTestCase):
    @classmethod
    def write_page(cls, path):
        subprocess.run([MEMPROF, "html", os.path.join(FIXTURES, "small_heap.json"), "-o", path],
                       check=True, capture_output=True)

    def test_sorts_a_table_by_the_column_clicked(self):
        table = self.browser.find_element(By.ID, "by-type")
        self.assertEqual([row[0] for row in cells(table)][:2], ["CLASS", "MODULE"])  # by memsize
        table.find_elements(By.TAG_NAME, "th")[1].click()  # objects, most first
        self.assertEqual(table.get_attribute("data-sorted-by"), "1 desc")
        self.assertEqual(cells(table)[0][:2], ["STRING", "7"])
        table.find_elements(By.TAG_NAME, "th")[1].click()  # and the other way round
        self.assertEqual(table.get_attribute("data-sorted-by"), "1 asc")
        self.assertEqual(cells(table)[-1][:2], ["STRING", "7"])
        table.find_elements(By.TAG_NAME, "th")[0].click()  # names A-Z
        self.assertEqual([row[0] for row in cells(table)],
                         ["ARRAY", "CLASS", "HASH", "MODULE", "OBJECT", "STRING"])

    def test_group_page_then_object_page_then_back(self):
        self.browser.find_element(By.LINK_TEXT, "ARRAY").click()
        self.assertEqual(self.body("view"), "group/by_type/4")
        self.assertFalse(self.browser.find_element(By.ID, "overview").is_displayed())
        objects = self.browser.find_element(By.ID, "group-objects")
        self.assertEqual(cells(objects), [["0x7f1200000028", "ARRAY", "(ARRAY)", "80 B", "500 B", ""]])

        objects.find_element(By.LINK_TEXT, "0x7f1200000028").click()
        self.assertEqual(self.body("view"), "object/0x7f1200000028")
        detail = self.browser.find_element(By.ID, "detail")
        self.assertEqual(detail.find_element(By.TAG_NAME, "h2").text, "0x7f1200000028 ARRAY (ARRAY)")
        references = self.browser.find_element(By.ID, "object-references")
        self.assertEqual([row[0] for row in cells(references)],
                         ["0x7f1200000050", "0x7f1200000078", "0x7f12000000a0"])
        self.assertEqual(cells(self.browser.find_element(By.ID, "object-retainers")), [])
        path = [li.text for li in self.browser.find_elements(By.CSS_SELECTOR, "#object-path li")]
        self.assertEqual(path, ["root vm", "0x7f1200000028 ARRAY (ARRAY), 80 B"])

        # On to a referenced object's page.
        references.find_element(By.LINK_TEXT, "0x7f12000000a0").click()
        self.assertEqual(self.body("view"), "object/0x7f12000000a0")
        path = [li.text for li in self.browser.find_elements(By.CSS_SELECTOR, "#object-path li")]
        self.assertEqual(path, ["root vm", "0x7f1200000028 ARRAY (ARRAY), 80 B",
                                "0x7f12000000a0 HASH (HASH), 160 B"])
        self.browser.find_element(By.LINK_TEXT, "back to the overview").click()
        self.assertEqual(self.body("view"), "overview")
        self.assertTrue(self.browser.find_element(By.ID, "overview").is_displayed())

    def test_object_page_of_a_class_instance_shows_its_path(self):
        self.browser.get("file://" + self.page + "#object/0x7f12000000f0")
        self.assertEqual(self.body("view"), "object/0x7f12000000f0")
        path = [li.text for li in self.browser.find_elements(By.CSS_SELECTOR, "#object-path li")]
        self.assertEqual(path, ["root vm", "0x7f1200000028 ARRAY (ARRAY), 80 B",
                                "0x7f12000000a0 HASH (HASH), 160 B", "0x7f12000000f0 OBJECT Foo, 40 B"])
        retainers = cells(self.browser.find_element(By.ID, "object-retainers"))
        self.assertEqual([row[0] for row in retainers], ["0x7f12000000a0"])



class DuplicateStrings(PageTestCase):
    """Strings that differ only in their spaces are different rows, shown as they are."""

    @classmethod
    def write_page(cls, path):
        dump = path + ".json"
        with open(dump, "w", encoding="utf-8") as out:
            out.write('{"type":"ROOT", "root":"vm", "references":["0x7f1200000028"]}\n')
            out.write('{"address":"0x7f1200000028", "type":"ARRAY", "length":4, "memsize":80, '
                      '"references":["0x7f1200000050", "0x7f1200000078", "0x7f12000000a0", "0x7f12000000c8"]}\n')
            for index, value in enumerate(["   three spaces", "   three spaces", " one space", " one space"]):
                out.write('{"address":"0x7f12000000%02x", "type":"STRING", "bytesize":%d, "value":"%s", '
                          '"memsize":40}\n' % (0x50 + 0x28 * index, len(value), value))
        subprocess.run([MEMPROF, "html", dump, "-o", path], check=True, capture_output=True)

    def test_leading_spaces_are_shown(self):
        values = [row[0] for row in cells(self.browser.find_element(By.ID, "duplicate-strings"))]
        self.assertEqual(sorted(values), ["   three spaces", " one space"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
