// Writes the flame graph of testing::shop_profile() to argv[1], for html_click_test.py.
#include <cstdio>

#include "profile/flame_graph_html.h"
#include "sample_profiles.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT.html\n", argv[0]);
    return 2;
  }
  const auto written =
      memprof::profile::write_flame_graph_html(argv[1], memprof::profile::testing::shop_profile());
  if (!written.ok()) {
    std::fprintf(stderr, "%s\n", written.message().c_str());
    return 1;
  }
  return 0;
}
