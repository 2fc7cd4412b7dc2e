// Test helper: the DOM of a page after its scripts ran, from Debian's headless Chromium with
// networking, GPU and background services off and a throw-away profile.
#pragma once

#include <string>

#include "support/command_runner.h"

namespace memprof::report::testing {

// Chromium's serialized DOM (--dump-dom) of a local file, or the failed command's result.
memprof::testing::CommandResult render_dom(const std::string& html_path);

// Attribute `attribute` and the text of the element with id `id` in a serialized DOM:
// {"", ""} when the element or attribute is missing. Text stops at the first child element.
struct ElementView {
  std::string attribute;
  std::string text;
};
ElementView element_by_id(const std::string& dom, const std::string& id,
                          const std::string& attribute);

}  // namespace memprof::report::testing
