// The flame graph page: one self-contained HTML file (inline CSS and script, the profile embedded
// as JSON, nothing fetched, so it works offline and from a mail or a ticket) that draws the call
// tree (call_tree.h) root on top, each box as wide as its share of the value shown. A selector
// picks one of the four values; clicking a box zooms into it (the path to it stays on top, and
// the breadcrumb or "Reset zoom" leads back); hovering shows a box's full name, library,
// file:line, value and share of the total; the search box highlights matching functions and
// libraries and says how much of the total they hold.
#pragma once

#include <string>

#include "core/util/result.h"
#include "profile/stack_profile.h"

namespace memprof::profile {

// The page, showing `shown` when it opens. Fails as check_stack_profile() does.
Result<std::string> flame_graph_html(const StackProfile& profile,
                                     SampleValue shown = SampleValue::kInuseSpace);

// flame_graph_html() written to `path` through a temporary file and a rename. Fails with the
// profile's error or "cannot write PATH: <reason>".
Status write_flame_graph_html(const std::string& path, const StackProfile& profile,
                              SampleValue shown = SampleValue::kInuseSpace);

}  // namespace memprof::profile
