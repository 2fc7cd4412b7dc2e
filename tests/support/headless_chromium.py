"""Debian's headless Chromium driven by selenium (chromium-driver, and python3-selenium in the
system python), for the click-through tests of memprof's HTML pages (tests/report,
tests/profile). Like command_runner.h, a helper the tests load from here, no area of its own."""
import os
import tempfile
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


def start_chromium(scratch_dir, arguments=()):
    """A browser with the GPU and /dev/shm unused and a throw-away profile in scratch_dir, plus
    any further Chromium `arguments`. The caller quits it."""
    options = webdriver.ChromeOptions()
    for argument in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--user-data-dir=" + os.path.join(scratch_dir, "profile"), *arguments]:
        options.add_argument(argument)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


class PageTestCase(unittest.TestCase):
    """Tests of one page: written once by the class's write_page(path), opened afresh for every
    test, which starts once the page's script has set <body data-rendered="yes"> (memprof's
    pages do when they have drawn everything)."""

    chromium_arguments = ()

    @classmethod
    def write_page(cls, path):
        raise NotImplementedError

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.page = os.path.join(cls.dir.name, "page.html")
        cls.write_page(cls.page)
        cls.browser = start_chromium(cls.dir.name, cls.chromium_arguments)

    @classmethod
    def tearDownClass(cls):
        cls.browser.quit()
        cls.dir.cleanup()

    def setUp(self):
        self.browser.get("file://" + self.page)
        self.assertEqual(self.body("rendered"), "yes")

    def body(self, key):
        """The page's <body data-KEY> attribute."""
        return self.browser.find_element(By.TAG_NAME, "body").get_attribute("data-" + key)
