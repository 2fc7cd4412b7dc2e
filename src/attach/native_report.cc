#include "attach/native_report.h"

#include <simdjson.h>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/util/json_escape.h"
#include "core/util/path_name.h"
#include "heap/units.h"

namespace memprof::attach {
namespace {

using heap::bytes_text;
using heap::count_text;

Status read_counts(simdjson::dom::element object, NativeCounts& counts) {
  if (object["allocations"].get(counts.allocations) || object["allocated_bytes"].get(counts.allocated_bytes) ||
      object["frees"].get(counts.frees) || object["freed_bytes"].get(counts.freed_bytes) ||
      object["temporaries"].get(counts.temporaries) || object["live_blocks"].get(counts.live_blocks) ||
      object["live_bytes"].get(counts.live_bytes) || object["peak_live_bytes"].get(counts.peak_live_bytes))
    return err("malformed native snapshot from the agent (totals)");
  return ok_status();
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  append_json_escaped(out, text);
  return out + '"';
}

struct NamedSite {
  SiteName name;
  NativeCounts counts;
};

std::vector<NamedSite> named_sites(const NativeSnapshotView& snapshot, const proc::SymbolIndex& symbols) {
  std::vector<NamedSite> out;
  for (const NativeSite& site : snapshot.sites) out.push_back({name_site(symbols, site.return_address), site.counts});
  return out;
}

// The `top` rows with the most `key`, largest first; rows where it is 0 are left out.
template <typename Key>
std::vector<const NamedSite*> top_by(const std::vector<NamedSite>& sites, size_t top, Key key) {
  std::vector<const NamedSite*> rows;
  for (const NamedSite& site : sites)
    if (key(site.counts) > 0) rows.push_back(&site);
  std::stable_sort(rows.begin(), rows.end(), [&](const NamedSite* a, const NamedSite* b) {
    return key(a->counts) > key(b->counts);
  });
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
  MEMPROF_TRY_STATUS(read_counts(totals, out.totals));
  if (totals["unknown_frees"].get(out.unknown_frees) || totals["missed_frees"].get(out.missed_frees) ||
      totals["dropped"].get(out.dropped) || totals["engine_bytes"].get(out.engine_bytes))
    return err("malformed native snapshot from the agent (totals)");
  for (simdjson::dom::element problem : problems) {
    std::string_view text;
    if (problem.get(text) == simdjson::SUCCESS) out.problems.emplace_back(text);
  }
  for (simdjson::dom::element element : sites) {
    simdjson::dom::array row;
    uint64_t v[9];
    if (element.get(row) || row.size() != 9) return err("malformed native snapshot from the agent (site)");
    for (size_t i = 0; i < 9; ++i)
      if (row.at(i).get(v[i])) return err("malformed native snapshot from the agent (site)");
    out.sites.push_back({v[0], {v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]}});
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

std::string native_report_text(const NativeSnapshotView& snapshot, const proc::SymbolIndex& symbols,
                               const NativeReportOptions& options) {
  const NativeCounts& t = snapshot.totals;
  std::string out = fmt::format(
      "In {:.1f} s: {} allocations ({}), {} frees ({}), {} temporary; live at the end: {} blocks ({}); "
      "peak {}\n",
      options.seconds, count_text(t.allocations), bytes_text(t.allocated_bytes), count_text(t.frees),
      bytes_text(t.freed_bytes), count_text(t.temporaries), count_text(t.live_blocks), bytes_text(t.live_bytes),
      bytes_text(t.peak_live_bytes));
  if (snapshot.unknown_frees > 0)
    out += fmt::format("{} frees of blocks allocated before the start (not counted above)\n",
                       count_text(snapshot.unknown_frees));
  if (snapshot.dropped > 0)
    out += fmt::format("{} allocations not recorded: the tracker had no memory left\n", count_text(snapshot.dropped));
  std::vector<NamedSite> sites = named_sites(snapshot, symbols);

  std::map<std::string, NativeCounts> libraries;
  for (const NamedSite& site : sites) {
    NativeCounts& sum = libraries[site.name.library];
    sum.allocations += site.counts.allocations;
    sum.allocated_bytes += site.counts.allocated_bytes;
    sum.live_blocks += site.counts.live_blocks;
    sum.live_bytes += site.counts.live_bytes;
  }
  std::vector<std::pair<std::string, NativeCounts>> by_library(libraries.begin(), libraries.end());
  std::stable_sort(by_library.begin(), by_library.end(),
                   [](const auto& a, const auto& b) { return a.second.live_bytes > b.second.live_bytes; });
  out += "\nLive at the end (leaked), by library\n      bytes     blocks  library\n";
  for (const auto& [library, counts] : by_library)
    if (counts.live_bytes > 0)
      out += fmt::format("{:>11} {:>10}  {}\n", counts.live_bytes, counts.live_blocks, library);

  out += "\nLive at the end (leaked), by call site\n      bytes     blocks  call site\n";
  for (const NamedSite* site : top_by(sites, options.top, [](const NativeCounts& c) { return c.live_bytes; }))
    out += fmt::format("{:>11} {:>10}  {}\n", site->counts.live_bytes, site->counts.live_blocks, site->name.site);

  out += "\nAllocated, by call site\n      bytes     blocks  temporary  call site\n";
  for (const NamedSite* site : top_by(sites, options.top, [](const NativeCounts& c) { return c.allocated_bytes; }))
    out += fmt::format("{:>11} {:>10} {:>10}  {}\n", site->counts.allocated_bytes, site->counts.allocations,
                       site->counts.temporaries, site->name.site);

  out += fmt::format("\nLive at the peak ({}), by call site\n      bytes  call site\n", bytes_text(t.peak_live_bytes));
  for (const NamedSite* site : top_by(sites, options.top, [](const NativeCounts& c) { return c.peak_live_bytes; }))
    out += fmt::format("{:>11}  {}\n", site->counts.peak_live_bytes, site->name.site);
  return out;
}

std::string native_report_json(const NativeSnapshotView& snapshot, const proc::SymbolIndex& symbols,
                               const NativeReportOptions& options) {
  auto counts_json = [](const NativeCounts& c) {
    return fmt::format(
        "\"allocations\":{},\"allocated_bytes\":{},\"frees\":{},\"freed_bytes\":{},\"temporaries\":{},"
        "\"live_blocks\":{},\"live_bytes\":{},\"peak_live_bytes\":{}",
        c.allocations, c.allocated_bytes, c.frees, c.freed_bytes, c.temporaries, c.live_blocks, c.live_bytes,
        c.peak_live_bytes);
  };
  std::string out = fmt::format(
      "{{\"seconds\":{:.3f},\"totals\":{{{},\"unknown_frees\":{},\"dropped\":{},\"engine_bytes\":{}}},\"sites\":[",
      options.seconds, counts_json(snapshot.totals), snapshot.unknown_frees, snapshot.dropped, snapshot.engine_bytes);
  std::vector<NamedSite> sites = named_sites(snapshot, symbols);
  for (size_t i = 0; i < sites.size(); ++i)
    out += fmt::format("{}{{\"site\":{},\"library\":{},\"address\":{},{}}}", i ? "," : "", json_string(sites[i].name.site),
                       json_string(sites[i].name.library), snapshot.sites[i].return_address,
                       counts_json(sites[i].counts));
  return out + "]}\n";
}

}  // namespace memprof::attach
