#include "browser.h"

#include <regex>

namespace memprof::report::testing {

memprof::testing::CommandResult render_dom(const std::string& html_path) {
  memprof::testing::TempDir profile;
  return memprof::testing::run_command(
      {"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
       "--no-first-run", "--disable-background-networking", "--disable-component-update",
       "--disable-sync", "--user-data-dir=" + profile.path(), "--dump-dom", "file://" + html_path});
}

ElementView element_by_id(const std::string& dom, const std::string& id,
                          const std::string& attribute) {
  const std::regex tag("<[a-z]+ [^>]*id=\"" + id + "\"[^>]*>([^<]*)");
  std::smatch m;
  if (!std::regex_search(dom, m, tag)) return {};
  ElementView view;
  view.text = m[1];
  const std::string open = m[0];
  const std::regex attr(" " + attribute + "=\"([^\"]*)\"");
  std::smatch a;
  if (std::regex_search(open, a, attr)) view.attribute = a[1];
  return view;
}

}  // namespace memprof::report::testing
