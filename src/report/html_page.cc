#include "report/html_page.h"

namespace memprof::report {
namespace {

// The CSP allows inline style and script (the page's own), images only from data: URIs and
// nothing else: a report opened from a mail or a ticket never calls home and works offline.
constexpr std::string_view kHead = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
)html";

constexpr std::string_view kStyle = R"css(<style>
body { font: 14px/1.4 system-ui, sans-serif; color: #222; margin: 0 auto; max-width: 1200px; padding: 0 16px 48px; }
h1 { font-size: 22px; margin: 20px 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.muted { color: #666; }
.warning { color: #a00; font-weight: bold; }
dl.totals { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; }
dl.totals dt { color: #555; }
dl.totals dd { margin: 0; font-variant-numeric: tabular-nums; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 2px 10px; text-align: right; border-bottom: 1px solid #eee; }
th { background: #f5f5f5; position: sticky; top: 0; }
th.text, td.text { text-align: left; }
td.text { max-width: 640px; overflow-wrap: anywhere; }
.string { white-space: pre-wrap; font-family: ui-monospace, monospace; }  /* spaces are content */
th.sortable { cursor: pointer; user-select: none; }
th.sortable[data-dir="asc"]::after { content: " \25B2"; }
th.sortable[data-dir="desc"]::after { content: " \25BC"; }
a { color: #0645ad; text-decoration: none; }
a:hover { text-decoration: underline; }
ol.path { padding-left: 24px; }
#detail dl.totals { margin-bottom: 12px; }
.columns { display: flex; gap: 32px; flex-wrap: wrap; align-items: flex-start; }
.scroll { max-height: 420px; overflow: auto; }
#treemap { width: 100%; height: 480px; display: block; border: 1px solid #ccc; }
#treemap text { font-size: 11px; pointer-events: none; fill: #111; }
#treemap rect { stroke: #fff; stroke-width: 1; }
#heapmap { max-width: 100%; image-rendering: pixelated; border: 1px solid #ccc; }
</style>
)css";

// The script reads both JSON blocks, fills every table and total, and lays out the treemap. The
// summary's object count is summed from the per-type rows in the browser, so a page whose
// script broke (or whose data disagrees with itself) shows it.
constexpr std::string_view kScript = R"js(<script>
"use strict";
(function () {
  const data = id => JSON.parse(document.getElementById(id).textContent);
  const analysis = data("analysis-data");
  const report = data("report-data");
  const objects = data("objects-data");

  function groupDigits(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
  // SI units with one decimal, as the text report writes them.
  function bytes(n) {
    if (n < 1000) return groupDigits(n) + " B";
    const units = ["kB", "MB", "GB", "TB"];
    let v = n / 1000, u = 0;
    while (v >= 999.95 && u + 1 < units.length) { v /= 1000; u++; }
    return v.toFixed(1) + " " + units[u];
  }
  function node(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function link(text, href) {
    const a = node("a", text);
    a.href = href;
    return a;
  }
  // An address, linked to its object page when the page has one.
  function objectLink(address) {
    return objects[address] ? link(address, "#object/" + address) : node("span", address);
  }
  function setValue(id, value, text) {
    const e = document.getElementById(id);
    e.textContent = text;
    e.dataset.value = String(value);
  }
  // columns: [heading, row => value, kind, row => element (optional)]; kind "num" | "bytes" |
  // "text". Clicking a heading sorts by that column (numbers largest first, text A-Z, then
  // the other way round). `target`: the table or its id.
  function fillTable(target, columns, rows) {
    const table = typeof target === "string" ? document.getElementById(target) : target;
    table.textContent = "";
    const head = node("tr");
    const body = node("tbody");
    function render(list) {
      body.textContent = "";
      for (const row of list) {
        const tr = body.appendChild(node("tr"));
        for (const [, get, kind, make] of columns) {
          const v = get(row);
          const td = node("td", undefined, kind === "text" ? "text" : undefined);
          if (make) td.appendChild(make(row));
          else td.textContent = kind === "bytes" ? bytes(v) : kind === "num" ? groupDigits(v) : v;
          tr.appendChild(td);
        }
      }
    }
    columns.forEach(([heading, get, kind], index) => {
      const th = node("th", heading, "sortable" + (kind === "text" ? " text" : ""));
      th.addEventListener("click", () => {
        const dir = th.dataset.dir === (kind === "text" ? "asc" : "desc")
                        ? (kind === "text" ? "desc" : "asc") : (kind === "text" ? "asc" : "desc");
        for (const other of head.children) delete other.dataset.dir;
        th.dataset.dir = dir;
        const sign = dir === "asc" ? 1 : -1;
        render(rows.slice().sort((a, b) => {
          const x = get(a), y = get(b);
          return sign * (kind === "text" ? String(x).localeCompare(String(y)) : x - y);
        }));
        table.dataset.sortedBy = index + " " + dir;
      });
      head.appendChild(th);
    });
    table.appendChild(node("thead")).appendChild(head);
    table.appendChild(body);
    render(rows);
    table.dataset.rows = String(rows.length);
  }
  const samplesCell = r => {
    const span = node("span");
    for (const address of r.samples || []) { span.appendChild(objectLink(address)); span.append(" "); }
    return span;
  };

  // ---- summary ----
  const count = analysis.by_type.reduce((s, r) => s + r.count, 0);
  const memsize = analysis.by_type.reduce((s, r) => s + r.memsize, 0);
  document.getElementById("dump-name").textContent = analysis.dump;
  setValue("total-count", count, groupDigits(count));
  setValue("total-memsize", memsize, bytes(memsize));
  setValue("reachable-count", analysis.reachable.count, groupDigits(analysis.reachable.count));
  setValue("reachable-memsize", analysis.reachable.memsize, bytes(analysis.reachable.memsize));
  setValue("machine-context-only", analysis.machine_context_only.count,
           groupDigits(analysis.machine_context_only.count) +
               (analysis.machine_context_only.count === 1 ? " object, " : " objects, ") +
           bytes(analysis.machine_context_only.memsize));
  setValue("bad-lines", analysis.bad_lines, groupDigits(analysis.bad_lines));
  if (count !== analysis.total.count || memsize !== analysis.total.memsize) {
    document.getElementById("consistency").textContent =
        "per-type rows add up to " + count + " objects / " + memsize + " bytes, but the dump " +
        "total is " + analysis.total.count + " / " + analysis.total.memsize;
  }

  // ---- groups: each name leads to the group's page ----
  const groupings = [["by-type", "by_type"], ["by-class", "by_class"], ["by-location", "by_location"],
                     ["by-gem", "by_gem"], ["by-generation", "by_generation"]];
  for (const [id, key] of groupings) {
    analysis[key].forEach((r, i) => { r.index = i; });
    fillTable(id, [["name", r => r.name, "text", r => link(r.name, "#group/" + key + "/" + r.index)],
                   ["objects", r => r.count, "num"], ["memsize", r => r.memsize, "bytes"],
                   ["retained", r => r.retained, "bytes"]], analysis[key]);
  }
  fillTable("roots", [["root kind", r => r.kind, "text"], ["references", r => r.count, "num"]],
            analysis.roots);
  const objectColumns = [["address", r => r.address, "text", r => objectLink(r.address)],
                         ["type", r => r.type, "text"], ["name", r => r.name, "text"],
                         ["memsize", r => r.memsize, "bytes"], ["retained", r => r.retained, "bytes"],
                         ["allocated at", r => r.location || "", "text"]];
  fillTable("top-retained", objectColumns, analysis.top_retained);
  fillTable("biggest", objectColumns, analysis.biggest);
  fillTable("machine-context-objects", objectColumns, analysis.machine_context_only_objects);
  fillTable("most-referenced", [["referrers", r => r.referrers, "num"]].concat(objectColumns),
            analysis.most_referenced);
  fillTable("duplicate-strings",
            [["value", r => r.value + (r.cut ? "..." : ""), "text",
              r => node("span", r.value + (r.cut ? "..." : ""), "string")], ["copies", r => r.count, "num"],
             ["memsize", r => r.memsize, "bytes"], ["wasted", r => r.wasted, "bytes"],
             ["copies, largest first", r => (r.samples || []).length, "text", samplesCell]],
            analysis.duplicate_strings);

  // ---- the group and object pages, chosen by the address bar's #fragment ----
  const overview = document.getElementById("overview");
  const detail = document.getElementById("detail");
  function field(dl, name, value) {
    dl.appendChild(node("dt", name));
    const dd = dl.appendChild(node("dd"));
    if (value instanceof Node) dd.appendChild(value); else dd.textContent = value;
  }
  function objectList(title, addresses, more) {
    const section = node("section");
    section.appendChild(node("h3", title + " (" + groupDigits(addresses.length + more) + ")"));
    const table = section.appendChild(node("table"));
    table.id = "object-" + title;
    fillTable(table, objectColumns, addresses.map(a => Object.assign({address: a}, objects[a])));
    if (more > 0) section.appendChild(node("p", "... and " + groupDigits(more) + " more", "muted"));
    return section;
  }
  function showGroup(key, index) {
    const row = analysis[key][index];
    detail.appendChild(node("h2", key.replace("_", " ") + ": " + row.name));
    const dl = detail.appendChild(node("dl", undefined, "totals"));
    field(dl, "objects", groupDigits(row.count));
    field(dl, "memsize", bytes(row.memsize));
    field(dl, "retained", bytes(row.retained));
    detail.appendChild(node("p", "Its objects that retain the most:", "muted"));
    const table = detail.appendChild(node("table"));
    table.id = "group-objects";
    fillTable(table, objectColumns,
              (row.samples || []).map(a => Object.assign({address: a}, objects[a])));
  }
  function showObject(address) {
    const o = objects[address];
    detail.appendChild(node("h2", address + " " + o.type + " " + o.name));
    const dl = detail.appendChild(node("dl", undefined, "totals"));
    field(dl, "class", o.class);
    field(dl, "memsize", bytes(o.memsize));
    field(dl, "retained", bytes(o.retained));
    field(dl, "allocated at", o.location || "(no allocation site)");
    field(dl, "generation", o.generation === null ? "(none)" : String(o.generation));
    if (o.summary) {
      detail.appendChild(node("p", "This report lists no references for this object: run " +
                                   "memprof show DUMP " + address + ".", "muted"));
      return;
    }
    detail.appendChild(objectList("references", o.references, o.more_references));
    detail.appendChild(objectList("retainers", o.retainers, o.more_retainers));
    detail.appendChild(node("h3", "Path from a root"));
    if (o.root === null) {
      detail.appendChild(node("p", "Not reachable from any root (" + (analysis.roots.length === 0
          ? "the dump has no ROOT lines" : "garbage the GC has not swept yet") + ")."));
      return;
    }
    const path = detail.appendChild(node("ol", undefined, "path"));
    path.id = "object-path";
    path.appendChild(node("li", "root " + o.root));
    for (const hop of o.path) {
      const li = path.appendChild(node("li"));
      if (typeof hop === "string") {
        li.appendChild(objectLink(hop));
        li.append(" " + objects[hop].type + " " + objects[hop].name + ", " + bytes(objects[hop].memsize));
      } else {
        li.textContent = "... " + groupDigits(hop.collapsed) + " more " + hop.name + " ...";
      }
    }
  }
  function route() {
    detail.textContent = "";
    const [view, a, b] = location.hash.slice(1).split("/");
    const known = view === "object" ? objects[a] : view === "group" ? analysis[a] && analysis[a][b] : null;
    overview.hidden = !!known;
    detail.hidden = !known;
    if (!known) { document.body.dataset.view = "overview"; return; }
    detail.appendChild(link("back to the overview", "#"));
    if (view === "object") showObject(a); else showGroup(a, Number(b));
    document.body.dataset.view = view + "/" + a + (b === undefined ? "" : "/" + b);
    window.scrollTo(0, 0);
  }
  window.addEventListener("hashchange", route);

  // ---- treemap: squarified layout (Bruls, Huizing, van Wijk) of the dominator-tree tops ----
  function worst(row, side) {
    let sum = 0, max = 0, min = Infinity;
    for (const r of row) { sum += r.area; max = Math.max(max, r.area); min = Math.min(min, r.area); }
    return Math.max(side * side * max / (sum * sum), (sum * sum) / (side * side * min));
  }
  function placeRow(row, box, out) {
    const sum = row.reduce((s, r) => s + r.area, 0);
    if (box.w >= box.h) {  // a column along the left edge
      const w = sum / box.h;
      let y = box.y;
      for (const r of row) { const h = r.area / w; out.push({x: box.x, y, w, h, item: r.item}); y += h; }
      return {x: box.x + w, y: box.y, w: box.w - w, h: box.h};
    }
    const h = sum / box.w;  // a row along the top edge
    let x = box.x;
    for (const r of row) { const w = r.area / h; out.push({x, y: box.y, w, h, item: r.item}); x += w; }
    return {x: box.x, y: box.y + h, w: box.w, h: box.h - h};
  }
  function squarify(items, box) {
    const total = items.reduce((s, i) => s + i.retained, 0);
    const out = [];
    if (total <= 0) return out;
    const scale = box.w * box.h / total;
    const queue = items.map(item => ({item, area: item.retained * scale}));
    let row = [];
    while (queue.length > 0) {
      const side = Math.min(box.w, box.h);
      if (row.length === 0 || worst(row.concat([queue[0]]), side) <= worst(row, side)) {
        row.push(queue.shift());
      } else {
        box = placeRow(row, box, out);
        row = [];
      }
    }
    if (row.length > 0) placeRow(row, box, out);
    return out;
  }
  function hue(name) {
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) % 360;
    return h;
  }
  const svg = document.getElementById("treemap");
  // Laid out in the svg's own pixels so labels keep their size at any page width.
  const W = Math.max(svg.clientWidth, 300), H = Math.max(svg.clientHeight, 200);
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  const SVG = "http://www.w3.org/2000/svg";  // an XML namespace name, never fetched
  const treemapTotal = report.treemap.reduce((s, g) => s + g.retained, 0);
  setValue("treemap-total", treemapTotal, bytes(treemapTotal));
  for (const r of squarify(report.treemap, {x: 0, y: 0, w: W, h: H})) {
    const g = document.createElementNS(SVG, "g");
    const rect = document.createElementNS(SVG, "rect");
    rect.setAttribute("x", r.x.toFixed(1));
    rect.setAttribute("y", r.y.toFixed(1));
    rect.setAttribute("width", Math.max(r.w, 0).toFixed(1));
    rect.setAttribute("height", Math.max(r.h, 0).toFixed(1));
    rect.setAttribute("fill", "hsl(" + hue(r.item.name) + ", 55%, 68%)");
    rect.dataset.retained = String(r.item.retained);
    const title = document.createElementNS(SVG, "title");
    title.textContent = r.item.name + ": " + bytes(r.item.retained) + " retained by " +
                        groupDigits(r.item.objects) + " top-level objects";
    rect.appendChild(title);
    g.appendChild(rect);
    if (r.w > 70 && r.h > 16) {
      const label = document.createElementNS(SVG, "text");
      label.setAttribute("x", (r.x + 4).toFixed(1));
      label.setAttribute("y", (r.y + 13).toFixed(1));
      const room = Math.floor((r.w - 8) / 6.2);
      const text = r.item.name + " " + bytes(r.item.retained);
      label.textContent = text.length > room ? text.slice(0, Math.max(room - 1, 1)) + "…" : text;
      g.appendChild(label);
    }
    svg.appendChild(g);
  }
  svg.dataset.rects = String(report.treemap.length);

  // ---- heap map ----
  const hm = report.heapmap;
  if (hm) {
    document.getElementById("heapmap-caption").textContent =
        groupDigits(hm.pages) + " pages, " + groupDigits(hm.slots) + " slots, " +
        groupDigits(hm.objects) + " objects (" + hm.layout + " layout: " + hm.reason + ")";
    fillTable("size-pools", [["slot size", r => r.slot_size, "num"], ["pages", r => r.pages, "num"],
                             ["slots", r => r.slots, "num"], ["objects", r => r.objects, "num"]],
              hm.pools);
    const img = document.getElementById("heapmap");
    const shown = () => setValue("heapmap-size", img.naturalWidth,
                                 img.naturalWidth + " x " + img.naturalHeight + " pixels");
    if (img.complete) shown(); else img.addEventListener("load", shown);
  }
  route();
  document.body.dataset.rendered = "yes";
})();
</script>
)js";

constexpr std::string_view kBodyTop = R"html(<body>
<h1>memprof heap report</h1>
<p class="muted">dump: <span id="dump-name"></span></p>
<p id="consistency" class="warning"></p>
<div id="detail" hidden></div>
<div id="overview">

<h2>Summary</h2>
<div class="columns">
<dl class="totals">
<dt>objects</dt><dd id="total-count"></dd>
<dt>memsize</dt><dd id="total-memsize"></dd>
<dt>reachable objects</dt><dd id="reachable-count"></dd>
<dt>reachable memsize</dt><dd id="reachable-memsize"></dd>
<dt>kept only by machine_context</dt><dd id="machine-context-only"></dd>
<dt>unreadable dump lines</dt><dd id="bad-lines"></dd>
</dl>
<table id="roots"></table>
</div>
<p class="muted">Click a column heading to sort by it, a group's name to see its objects that
retain the most, an address to see the object.</p>

<h2>By type</h2>
<table id="by-type"></table>

<h2>By class</h2>
<div class="scroll"><table id="by-class"></table></div>

<h2>By allocation site</h2>
<div class="scroll"><table id="by-location"></table></div>

<h2>By gem</h2>
<div class="scroll"><table id="by-gem"></table></div>

<h2>By generation</h2>
<div class="scroll"><table id="by-generation"></table></div>

<h2>Largest retained sizes (dominator tree)</h2>
<p class="muted">An object's retained size is the memory freed if it became unreachable: its own
memsize plus everything only it keeps alive. Each subtree of the dominator tree appears once,
by its top.</p>
<div class="scroll"><table id="top-retained"></table></div>

<h2>Biggest objects</h2>
<p class="muted">Live objects: garbage the GC had not swept yet (total minus reachable above) is
not listed, unless the dump has no readable ROOT lines to tell it apart.</p>
<div class="scroll"><table id="biggest"></table></div>

<h2>Kept alive only by machine_context</h2>
<p class="muted">Objects only the conservative scan of machine stacks and registers keeps alive.</p>
<div class="scroll"><table id="machine-context-objects"></table></div>

<h2>Most referenced objects</h2>
<div class="scroll"><table id="most-referenced"></table></div>

<h2>Duplicate strings</h2>
<p class="muted">Strings with the same value held by several objects; wasted: the memsize of
every copy but the largest.</p>
<div class="scroll"><table id="duplicate-strings"></table></div>

<h2>What holds the memory</h2>
<p class="muted">Each box is a class; its area is the memory retained by the top-level objects of
that class in the dominator tree (objects that only the roots keep alive). The boxes do not
overlap: together they are the reachable heap, <span id="treemap-total"></span>.</p>
<svg id="treemap" role="img" aria-label="treemap of retained size by class"></svg>
)html";

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string script_safe_json(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

std::string html_head(std::string_view title, std::string_view style) {
  std::string head(kHead);
  head += "<title>memprof: ";
  head += html_escape(title);
  head += "</title>\n";
  head += style;
  head += "</head>\n";
  return head;
}

std::string html_page(const HtmlPageParts& parts) {
  std::string page = html_head(parts.title, kStyle);
  page.reserve(page.size() + kBodyTop.size() + kScript.size() + parts.analysis_json.size() +
               parts.report_json.size() + parts.objects_json.size() + parts.heapmap_base64.size() +
               1024);
  page += kBodyTop;
  if (!parts.heapmap_base64.empty()) {
    page += "\n<h2>Heap pages</h2>\n<p class=\"muted\" id=\"heapmap-caption\"></p>\n"
            "<p class=\"muted\">Decoded in this browser: <span id=\"heapmap-size\"></span>.</p>\n"
            "<p class=\"muted\">Each size pool (pages of one slot size) is drawn as a section "
            "of its own:</p>\n<table id=\"size-pools\"></table>\n"
            "<img id=\"heapmap\" alt=\"heap map: one section per size pool, one column per heap "
            "page, one cell per slot\" "
            "src=\"data:image/png;base64,";
    page += parts.heapmap_base64;
    page += "\">\n";
  }
  page += "</div>\n";  // overview
  page += "\n<script type=\"application/json\" id=\"analysis-data\">";
  page += script_safe_json(parts.analysis_json);
  page += "</script>\n<script type=\"application/json\" id=\"report-data\">";
  page += script_safe_json(parts.report_json);
  page += "</script>\n<script type=\"application/json\" id=\"objects-data\">";
  page += script_safe_json(parts.objects_json);
  page += "</script>\n";
  page += kScript;
  page += "</body>\n</html>\n";
  return page;
}

}  // namespace memprof::report
