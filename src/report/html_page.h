// The HTML report's page: fixed CSS and script around the report's data. The page is one file
// with nothing to fetch: its Content-Security-Policy forbids every network request, the data is
// embedded as JSON and the heap map as a data: URI, and the script draws the tables and the
// treemap from the JSON when the page loads.
#pragma once

#include <string>
#include <string_view>

namespace memprof::report {

struct HtmlPageParts {
  std::string_view title;           // plain text; escaped here
  std::string_view analysis_json;   // render_analysis_json() output: totals, groups, top lists
  std::string_view report_json;     // treemap groups and heap map facts (html_report.cc)
  std::string_view objects_json = "{}";  // object_pages_json(): the objects the page links to
  std::string_view heapmap_base64;  // PNG bytes in base64; empty: no heap map section
};

std::string html_page(const HtmlPageParts& parts);

// A self-contained page from its start to </head>: the doctype, UTF-8, the Content-Security-
// Policy that lets it fetch nothing (style and script inline, images from data: URIs), the
// viewport, "memprof: TITLE" as its title (escaped here) and `style` (a <style> element) as is.
// The HTML report's page and the flame graph (profile/flame_graph_html.h) start with it.
std::string html_head(std::string_view title, std::string_view style);

// Text safe inside HTML element content and attribute values: & < > " ' escaped.
std::string html_escape(std::string_view text);

// JSON made safe inside <script type="application/json">: every '<' (which in JSON can only
// occur inside strings) becomes \u003c, so no "</script>" or "<!--" in a class name or file path
// can end the element early.
std::string script_safe_json(std::string_view json);

}  // namespace memprof::report
