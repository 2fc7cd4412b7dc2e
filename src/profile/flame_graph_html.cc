#include "profile/flame_graph_html.h"

#include <iterator>
#include <string_view>

#include <fmt/format.h>

#include "core/util/json_escape.h"
#include "profile/call_tree.h"
#include "profile/profile_file.h"
#include "report/html_page.h"

namespace memprof::profile {
namespace {

// Boxes are absolutely placed divs (left and width in percent of the chart, so the page needs
// no new layout when the window is resized); a search match is magenta as in flamegraph.pl, and
// the frames above a zoomed box are faded.
constexpr std::string_view kStyle = R"css(<style>
body { font: 14px/1.4 system-ui, sans-serif; color: #222; margin: 0; padding: 0 16px 32px; }
h1 { font-size: 20px; margin: 16px 0 2px; overflow-wrap: anywhere; }
.muted { color: #666; }
.controls { display: flex; flex-wrap: wrap; gap: 8px 20px; align-items: center; margin: 10px 0 6px; }
#total, #matched { font-variant-numeric: tabular-nums; }
#matched { min-width: 20em; }  /* room kept: a search does not move the chart under the mouse */
#search { width: 260px; }
#breadcrumb { min-height: 21px; overflow-wrap: anywhere; }
#breadcrumb button { border: 0; background: none; padding: 0; font: inherit; color: #0645ad; cursor: pointer; }
#breadcrumb button:hover { text-decoration: underline; }
#breadcrumb button[aria-current] { color: #222; font-weight: bold; cursor: default; text-decoration: none; }
#breadcrumb button + button::before { content: "\203A"; color: #999; padding: 0 6px; font-weight: normal; }
#details { min-height: 21px; margin: 4px 0 8px; font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
#details span:empty { display: none; }
#details span + span::before { content: "\00B7"; color: #999; padding: 0 8px; }
#detail-name { font-weight: bold; }
#chart { position: relative; width: 100%; border-top: 1px solid #ddd; }
.frame { position: absolute; height: 17px; box-sizing: border-box; padding: 0 3px; border-right: 1px solid #fff;
         overflow: hidden; white-space: nowrap; text-overflow: ellipsis; font: 12px/17px ui-monospace, monospace;
         color: #111; cursor: pointer; }
.frame:hover { outline: 1px solid #222; z-index: 1; }
.frame.ancestor { opacity: 0.5; }
.frame.match { background: #e600e6 !important; color: #fff; }
</style>
)css";

constexpr std::string_view kBody = R"html(<p class="muted" id="recorded"></p>
<div class="controls">
<label>Value <select id="value"></select></label>
<span>Total <strong id="total"></strong></span>
<button id="reset" type="button">Reset zoom</button>
<input id="search" type="search" placeholder="Search functions and libraries" aria-label="search functions and libraries">
<span id="matched"></span>
</div>
<nav id="breadcrumb" aria-label="zoomed into"></nav>
<p id="details"><span id="detail-name"></span><span id="detail-library"></span><span id="detail-location"></span><span id="detail-value"></span><span id="detail-percent"></span><span id="detail-self"></span></p>
<div id="chart"></div>
<p class="muted">Each box is a function in a stack, its callers above it; its width is the value
of all the stacks through it. Click a box to zoom into it, the breadcrumb or Escape to go back.</p>
)html";

// Builds the tree's nodes from the embedded JSON (parents before children), lays out the zoomed
// subtree, and redraws whenever the value, the zoom or the search changes. State worth checking
// from outside is mirrored in data- attributes (body: rendered, value; #chart: zoom, frames,
// matches; #total and #matched: data-value), which the Chromium test reads.
constexpr std::string_view kScript = R"js(<script>
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("profile-data").textContent);
  const $ = id => document.getElementById(id);
  const chart = $("chart");
  const ROW = 18;
  const MIN_WIDTH_PX = 0.5;  // narrower boxes (and so all their children) are not drawn

  const nodes = data.nodes.map(([parent, frame, ...values], index) => ({
    index, parent: null, parentIndex: parent, values, children: [], depth: 0,
    frame: frame < 0 ? {label: "all", library: "", locations: [], symbolized: true} : data.frames[frame]
  }));
  for (const node of nodes) {
    if (node.parentIndex < 0) continue;
    node.parent = nodes[node.parentIndex];
    node.depth = node.parent.depth + 1;
    node.parent.children.push(node);
  }
  const root = nodes[0];
  // Alphabetical, as flamegraph.pl: a box stays in its place whichever value is shown.
  const byLabel = (a, b) => a.frame.label < b.frame.label ? -1 : a.frame.label > b.frame.label ? 1 : 0;
  for (const node of nodes) node.children.sort(byLabel);

  let shown = Math.max(0, data.values.findIndex(v => v.name === data.shown));
  let zoomed = root;
  let query = "";

  function digits(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
  // In the unit of the value shown: objects, or bytes in SI units with one decimal as memprof's
  // text reports write them, with the exact number of bytes after them.
  function amount(n) {
    if (!data.values[shown].bytes) return digits(n) + (n === 1 ? " object" : " objects");
    if (n < 1000) return digits(n) + " B";
    const units = ["kB", "MB", "GB", "TB", "PB"];
    let v = n / 1000, u = 0;
    while (v >= 999.95 && u + 1 < units.length) { v /= 1000; u++; }
    return v.toFixed(1) + " " + units[u];
  }
  function exactAmount(n) {
    return data.values[shown].bytes && n >= 1000 ? amount(n) + " (" + digits(n) + " B)" : amount(n);
  }
  function share(n) {
    const total = root.values[shown];
    return (total > 0 ? 100 * n / total : 0).toFixed(2) + "% of total";
  }
  function matches(node) {
    if (!query || node === root) return false;
    return node.frame.label.toLowerCase().includes(query) ||
           node.frame.library.toLowerCase().includes(query);
  }
  // A warm colour from the label, the same on every load; frames without a symbol are grey.
  function colour(frame) {
    if (!frame.symbolized) return "hsl(0, 0%, 78%)";
    let h = 0;
    for (let i = 0; i < frame.label.length; i++) h = (h * 31 + frame.label.charCodeAt(i)) >>> 0;
    return "hsl(" + (h % 50) + ", " + (70 + (h >>> 8) % 25) + "%, " + (58 + (h >>> 16) % 12) + "%)";
  }

  function showDetails(node) {
    const self = node.values[shown] - node.children.reduce((s, c) => s + c.values[shown], 0);
    $("detail-name").textContent = node.frame.label;
    $("detail-library").textContent = node.frame.library;
    $("detail-location").textContent = node.frame.locations.join(", ");
    $("detail-value").textContent = exactAmount(node.values[shown]);
    $("detail-percent").textContent = share(node.values[shown]);
    $("detail-self").textContent = node.children.length ? "self " + amount(self) : "";
  }

  function pathTo(node) {
    const path = [];
    for (let n = node; n; n = n.parent) path.unshift(n);
    return path;
  }

  function render() {
    chart.textContent = "";
    const width = chart.clientWidth || 1;
    const base = zoomed.values[shown];
    let frames = 0, matched = 0, depths = 0;
    function draw(node, x, w, ancestor) {
      const box = document.createElement("div");
      box.className = "frame" + (ancestor ? " ancestor" : "") + (matches(node) ? " match" : "");
      box.style.left = (100 * x) + "%";
      box.style.width = (100 * w) + "%";
      box.style.top = (node.depth * ROW) + "px";
      box.style.background = colour(node.frame);
      box.textContent = node.frame.label;
      box.title = node.frame.label + (node.frame.library ? " [" + node.frame.library + "]" : "");
      box.dataset.node = String(node.index);
      box.dataset.name = node.frame.label;
      chart.appendChild(box);
      frames++;
      if (box.classList.contains("match")) matched++;
      depths = Math.max(depths, node.depth + 1);
    }
    const path = pathTo(zoomed);
    for (const node of path.slice(0, -1)) draw(node, 0, 1, true);
    const pending = [[zoomed, 0]];
    while (pending.length > 0) {
      const [node, x] = pending.pop();
      const w = base > 0 ? node.values[shown] / base : 0;
      if (!(w * width >= MIN_WIDTH_PX)) continue;
      draw(node, x, w, false);
      let childX = x;
      for (const child of node.children) {
        pending.push([child, childX]);
        childX += child.values[shown] / base;
      }
    }
    chart.style.height = (depths * ROW) + "px";
    chart.dataset.zoom = String(zoomed.index);
    chart.dataset.frames = String(frames);
    chart.dataset.matches = String(matched);

    const breadcrumb = $("breadcrumb");
    breadcrumb.textContent = "";
    for (const node of path) {
      const step = document.createElement("button");
      step.type = "button";
      step.textContent = node.frame.label;
      if (node === zoomed) step.setAttribute("aria-current", "true");
      else step.addEventListener("click", () => zoom(node));
      breadcrumb.appendChild(step);
    }
    $("reset").disabled = zoomed === root;

    const total = root.values[shown];
    $("total").textContent = exactAmount(total);
    $("total").dataset.value = String(total);
    // What the matching boxes hold, a match inside a match counted once.
    let matchedValue = 0;
    const covered = new Set();
    for (const node of nodes) {
      if (node.parent && covered.has(node.parent)) covered.add(node);
      else if (matches(node)) { covered.add(node); matchedValue += node.values[shown]; }
    }
    $("matched").textContent = query ? "matched: " + amount(matchedValue) + ", " + share(matchedValue) : "";
    $("matched").dataset.value = String(matchedValue);
    showDetails(zoomed);
    document.body.dataset.value = data.values[shown].name;
  }

  function zoom(node) {
    zoomed = node;
    render();
  }

  const select = $("value");
  data.values.forEach((value, i) => {
    const option = document.createElement("option");
    option.value = value.name;
    option.textContent = value.name + (value.bytes ? " (bytes)" : " (objects)");
    option.selected = i === shown;
    select.appendChild(option);
  });
  select.addEventListener("change", () => {
    shown = select.selectedIndex;
    if (!(zoomed.values[shown] > 0)) zoomed = root;  // nothing of it to show for this value
    render();
  });
  $("search").addEventListener("input", event => {
    query = event.target.value.trim().toLowerCase();
    render();
  });
  $("reset").addEventListener("click", () => zoom(root));
  window.addEventListener("resize", render);  // boxes too narrow to draw may fit now
  document.addEventListener("keydown", event => {
    if (event.key === "Escape" && document.activeElement !== $("search")) zoom(root);
  });
  const boxOf = event => event.target.closest ? event.target.closest(".frame") : null;
  chart.addEventListener("click", event => {
    const box = boxOf(event);
    if (box) zoom(nodes[Number(box.dataset.node)]);
  });
  chart.addEventListener("mouseover", event => {
    const box = boxOf(event);
    if (box) showDetails(nodes[Number(box.dataset.node)]);
  });
  chart.addEventListener("mouseleave", () => showDetails(zoomed));

  const recorded = [];
  if (data.time_nanos > 0) {
    recorded.push("taken " + new Date(data.time_nanos / 1e6).toISOString().slice(0, 19).replace("T", " ") + " UTC");
  }
  if (data.duration_nanos > 0) recorded.push("over " + (data.duration_nanos / 1e9).toFixed(1) + " s");
  $("recorded").textContent = recorded.join(", ");
  render();
  document.body.dataset.rendered = "yes";
})();
</script>
)js";

// {"title":..., "shown":..., "values":[{"name","bytes"}], "frames":[{"label","library",
// "locations","symbolized"}], "nodes":[[parent, frame, alloc_objects, alloc_space,
// inuse_objects, inuse_space], ...]}, the root's parent and frame -1.
std::string page_data(const StackProfile& profile, const CallTree& tree, SampleValue shown) {
  std::string json = "{\"title\":" + json_quoted(profile.title);
  fmt::format_to(std::back_inserter(json), ",\"time_nanos\":{},\"duration_nanos\":{},\"shown\":{}",
                 profile.time_nanos, profile.duration_nanos, json_quoted(sample_value_name(shown)));
  json += ",\"values\":[";
  for (SampleValue value : kSampleValues) {
    if (value != kSampleValues.front()) json += ',';
    fmt::format_to(std::back_inserter(json), "{{\"name\":{},\"bytes\":{}}}",
                   json_quoted(sample_value_name(value)), is_bytes(value));
  }
  json += "],\"frames\":[";
  for (size_t i = 0; i < tree.frames.size(); ++i) {
    const TreeFrame& frame = tree.frames[i];
    if (i > 0) json += ',';
    json += "{\"label\":" + json_quoted(frame.label) + ",\"library\":" + json_quoted(frame.library);
    json += ",\"locations\":[";
    for (size_t l = 0; l < frame.locations.size(); ++l) {
      if (l > 0) json += ',';
      json += json_quoted(frame.locations[l]);
    }
    fmt::format_to(std::back_inserter(json), "],\"symbolized\":{}}}", frame.symbolized);
  }
  json += "],\"nodes\":[";
  for (size_t i = 0; i < tree.nodes.size(); ++i) {
    const CallTreeNode& node = tree.nodes[i];
    if (i > 0) json += ',';
    fmt::format_to(std::back_inserter(json), "[{},{}", i == 0 ? -1 : int64_t{node.parent},
                   i == 0 ? -1 : int64_t{node.frame});
    for (int64_t total : node.totals) fmt::format_to(std::back_inserter(json), ",{}", total);
    json += ']';
  }
  return json + "]}";
}

}  // namespace

Result<std::string> flame_graph_html(const StackProfile& profile, SampleValue shown) {
  MEMPROF_TRY(tree, build_call_tree(profile));
  const std::string title = profile.title.empty() ? "flame graph" : profile.title;
  std::string page = report::html_head(title, kStyle);
  page += "<body data-rendered=\"no\">\n<h1>" + report::html_escape(title) + "</h1>\n";
  page += kBody;
  page += "<script type=\"application/json\" id=\"profile-data\">";
  page += report::script_safe_json(page_data(profile, tree, shown));
  page += "</script>\n";
  page += kScript;
  page += "</body>\n</html>\n";
  return page;
}

Status write_flame_graph_html(const std::string& path, const StackProfile& profile,
                              SampleValue shown) {
  return write_profile_file(path, flame_graph_html(profile, shown));
}

}  // namespace memprof::profile
