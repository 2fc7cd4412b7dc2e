#include "attach/native_report.h"

#include <simdjson.h>

#include <algorithm>
#include <iterator>
#include <map>

#include <fmt/format.h>

#include "core/util/json_escape.h"
#include "core/util/path_name.h"
#include "heap/units.h"

namespace memprof::attach {
namespace {

using heap::bytes_text;
using heap::count_text;

// The totals' fields, in the order of the agent's "totals" object, and the site rows' columns.
Status read_totals(simdjson::dom::element object, native::NativeTotals& t) {
  if (object["allocations"].get(t.allocations) || object["allocated_bytes"].get(t.allocated_bytes) ||
      object["frees"].get(t.frees) || object["freed_bytes"].get(t.freed_bytes) ||
      object["temporaries"].get(t.temporaries) || object["unknown_frees"].get(t.unknown_frees) ||
      object["live_blocks"].get(t.live_blocks) || object["live_bytes"].get(t.live_bytes) ||
      object["peak_live_bytes"].get(t.peak_live_bytes) || object["missed_frees"].get(t.missed_frees) ||
      object["dropped"].get(t.dropped) || object["engine_bytes"].get(t.engine_bytes))
    return err("malformed native snapshot from the agent (totals)");
  return ok_status();
}

Status read_site(simdjson::dom::element element, native::SiteRow& site) {
  simdjson::dom::array row;
  uint64_t* columns[] = {&site.return_address, &site.allocations, &site.allocated_bytes, &site.frees,
                         &site.freed_bytes, &site.temporaries, &site.live_blocks, &site.live_bytes,
                         &site.peak_live_bytes};
  if (element.get(row) || row.size() != std::size(columns)) return err("malformed native snapshot from the agent (site)");
  for (size_t i = 0; i < std::size(columns); ++i) {
    uint64_t value = 0;
    if (row.at(i).get(value)) return err("malformed native snapshot from the agent (site)");
    *columns[i] = value;
  }
  return ok_status();
}

struct NamedSite {
  SiteName name;
  const native::SiteRow* row;
};

std::vector<NamedSite> named_sites(const native::NativeSnapshot& snapshot, const proc::SymbolIndex& symbols) {
  std::vector<NamedSite> out;
  for (const native::SiteRow& site : snapshot.sites) out.push_back({name_site(symbols, site.return_address), &site});
  return out;
}

// The `top` rows with the most `key`, largest first; rows where it is 0 are left out.
template <typename Key>
std::vector<const NamedSite*> top_by(const std::vector<NamedSite>& sites, size_t top, Key key) {
  std::vector<const NamedSite*> rows;
  for (const NamedSite& site : sites)
    if (key(*site.row) > 0) rows.push_back(&site);
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const NamedSite* a, const NamedSite* b) { return key(*a->row) > key(*b->row); });
  if (rows.size() > top) rows.resize(top);
  return rows;
}

}  // namespace

Result<NativeSnapshotView> parse_native_snapshot(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json.data(), json.size()).get(root) != simdjson::SUCCESS)
    return err("malformed native snapshot from the agent");
  NativeSnapshotView out;
  simdjson::dom::element totals;
  simdjson::dom::array problems, sites;
  if (root["exiting"].get(out.exiting) || root["totals"].get(totals) || root["problems"].get(problems) ||
      root["sites"].get(sites))
    return err("malformed native snapshot from the agent");
  MEMPROF_TRY_STATUS(read_totals(totals, out.snapshot.totals));
  for (simdjson::dom::element problem : problems) {
    std::string_view text;
    if (problem.get(text) == simdjson::SUCCESS) out.problems.emplace_back(text);
  }
  for (simdjson::dom::element element : sites) {
    MEMPROF_TRY_STATUS(read_site(element, out.snapshot.sites.emplace_back()));
  }
  return out;
}

SiteName name_site(const proc::SymbolIndex& symbols, uint64_t return_address) {
  if (return_address == 0) return {"(other sites: the site table was full)", "?"};
  auto found = symbols.lookup(return_address);
  if (!found || found->object == nullptr) return {fmt::format("{:#x}", return_address), "?"};
  std::string library(file_name_of(found->object->object.path));
  if (found->symbol == nullptr)
    return {fmt::format("{:#x} ({}+{:#x})", return_address, library, found->offset), library};
  return {fmt::format("{}+{:#x} ({})", found->symbol->name, found->offset, library), library};
}

std::string native_report_text(const NativeSnapshotView& view, const proc::SymbolIndex& symbols,
                               const NativeReportOptions& options) {
  const native::NativeTotals& t = view.snapshot.totals;
  std::string out = fmt::format(
      "In {:.1f} s: {} allocations ({}), {} frees ({}), {} temporary; live at the end: {} blocks ({}); "
      "peak {}\n",
      options.seconds, count_text(t.allocations), bytes_text(t.allocated_bytes), count_text(t.frees),
      bytes_text(t.freed_bytes), count_text(t.temporaries), count_text(t.live_blocks), bytes_text(t.live_bytes),
      bytes_text(t.peak_live_bytes));
  if (t.unknown_frees > 0)
    out += fmt::format("{} frees of blocks allocated before the start (not counted above)\n",
                       count_text(t.unknown_frees));
  if (t.dropped > 0)
    out += fmt::format("{} allocations not recorded: the tracker had no memory left\n", count_text(t.dropped));
  std::vector<NamedSite> sites = named_sites(view.snapshot, symbols);

  std::map<std::string, native::SiteRow> libraries;
  for (const NamedSite& site : sites) {
    native::SiteRow& sum = libraries[site.name.library];
    sum.live_blocks += site.row->live_blocks;
    sum.live_bytes += site.row->live_bytes;
  }
  std::vector<std::pair<std::string, native::SiteRow>> by_library(libraries.begin(), libraries.end());
  std::stable_sort(by_library.begin(), by_library.end(),
                   [](const auto& a, const auto& b) { return a.second.live_bytes > b.second.live_bytes; });
  out += "\nLive at the end (leaked), by library\n      bytes     blocks  library\n";
  for (const auto& [library, sum] : by_library)
    if (sum.live_bytes > 0) out += fmt::format("{:>11} {:>10}  {}\n", sum.live_bytes, sum.live_blocks, library);

  out += "\nLive at the end (leaked), by call site\n      bytes     blocks  call site\n";
  for (const NamedSite* site : top_by(sites, options.top, [](const native::SiteRow& r) { return r.live_bytes; }))
    out += fmt::format("{:>11} {:>10}  {}\n", site->row->live_bytes, site->row->live_blocks, site->name.site);

  out += "\nAllocated, by call site\n      bytes     blocks  temporary  call site\n";
  for (const NamedSite* site : top_by(sites, options.top, [](const native::SiteRow& r) { return r.allocated_bytes; }))
    out += fmt::format("{:>11} {:>10} {:>10}  {}\n", site->row->allocated_bytes, site->row->allocations,
                       site->row->temporaries, site->name.site);

  out += fmt::format("\nLive at the peak ({}), by call site\n      bytes  call site\n", bytes_text(t.peak_live_bytes));
  for (const NamedSite* site : top_by(sites, options.top, [](const native::SiteRow& r) { return r.peak_live_bytes; }))
    out += fmt::format("{:>11}  {}\n", site->row->peak_live_bytes, site->name.site);
  return out;
}

std::string native_report_json(const NativeSnapshotView& view, const proc::SymbolIndex& symbols,
                               const NativeReportOptions& options) {
  const native::NativeTotals& t = view.snapshot.totals;
  std::string out = fmt::format(
      "{{\"seconds\":{:.3f},\"totals\":{{\"allocations\":{},\"allocated_bytes\":{},\"frees\":{},\"freed_bytes\":{},"
      "\"temporaries\":{},\"live_blocks\":{},\"live_bytes\":{},\"peak_live_bytes\":{},\"unknown_frees\":{},"
      "\"dropped\":{},\"engine_bytes\":{}}},\"sites\":[",
      options.seconds, t.allocations, t.allocated_bytes, t.frees, t.freed_bytes, t.temporaries, t.live_blocks,
      t.live_bytes, t.peak_live_bytes, t.unknown_frees, t.dropped, t.engine_bytes);
  std::vector<NamedSite> sites = named_sites(view.snapshot, symbols);
  for (size_t i = 0; i < sites.size(); ++i) {
    const native::SiteRow& r = *sites[i].row;
    out += fmt::format(
        "{}{{\"site\":{},\"library\":{},\"address\":{},\"allocations\":{},\"allocated_bytes\":{},\"frees\":{},"
        "\"freed_bytes\":{},\"temporaries\":{},\"live_blocks\":{},\"live_bytes\":{},\"peak_live_bytes\":{}}}",
        i ? "," : "", json_quoted(sites[i].name.site), json_quoted(sites[i].name.library), r.return_address,
        r.allocations, r.allocated_bytes, r.frees, r.freed_bytes, r.temporaries, r.live_blocks, r.live_bytes,
        r.peak_live_bytes);
  }
  return out + "]}\n";
}

}  // namespace memprof::attach
