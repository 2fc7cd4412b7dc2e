#include "attach/native_snapshot_json.h"

#include <simdjson.h>

#include <iterator>

namespace memprof::attach {
namespace {

constexpr const char* kMalformed = "malformed native snapshot from the agent";

// The totals' fields, as the agent's "totals" object names them.
Status read_totals(simdjson::dom::element object, native::NativeTotals& t) {
  if (object["allocations"].get(t.allocations) || object["allocated_bytes"].get(t.allocated_bytes) ||
      object["frees"].get(t.frees) || object["freed_bytes"].get(t.freed_bytes) ||
      object["temporaries"].get(t.temporaries) || object["unknown_frees"].get(t.unknown_frees) ||
      object["live_blocks"].get(t.live_blocks) || object["live_bytes"].get(t.live_bytes) ||
      object["peak_live_bytes"].get(t.peak_live_bytes) || object["missed_frees"].get(t.missed_frees) ||
      object["dropped"].get(t.dropped) || object["engine_bytes"].get(t.engine_bytes))
    return err("{} (totals)", kMalformed);
  return ok_status();
}

// [return_address, allocations, allocated_bytes, frees, freed_bytes, temporaries, live_blocks,
//  live_bytes, peak_live_bytes, ruby_file, ruby_line, [frames...]]
Status read_site(simdjson::dom::element element, size_t ruby_files, native::SiteRow& site) {
  simdjson::dom::array row, frames;
  uint64_t ruby_file = 0, ruby_line = 0;
  uint64_t* columns[] = {&site.return_address, &site.allocations, &site.allocated_bytes, &site.frees,
                         &site.freed_bytes, &site.temporaries, &site.live_blocks, &site.live_bytes,
                         &site.peak_live_bytes, &ruby_file, &ruby_line};
  if (element.get(row) || row.size() != std::size(columns) + 1) return err("{} (site)", kMalformed);
  for (size_t i = 0; i < std::size(columns); ++i)
    if (row.at(i).get(*columns[i])) return err("{} (site)", kMalformed);
  if (ruby_file >= ruby_files || ruby_line > UINT32_MAX || row.at(std::size(columns)).get(frames))
    return err("{} (site)", kMalformed);
  site.ruby_file = static_cast<uint32_t>(ruby_file);
  site.ruby_line = static_cast<uint32_t>(ruby_line);
  for (simdjson::dom::element frame : frames) {
    uint64_t address = 0;
    if (frame.get(address)) return err("{} (frame)", kMalformed);
    site.frames.push_back(address);
  }
  return ok_status();
}

}  // namespace

Result<NativeSnapshotView> parse_native_snapshot(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json.data(), json.size()).get(root) != simdjson::SUCCESS) return err("{}", kMalformed);
  NativeSnapshotView out;
  simdjson::dom::element totals;
  simdjson::dom::array problems, ruby_files, sites;
  if (root["exiting"].get(out.exiting) || root["totals"].get(totals) || root["problems"].get(problems) ||
      root["ruby_files"].get(ruby_files) || root["sites"].get(sites))
    return err("{}", kMalformed);
  MEMPROF_TRY_STATUS(read_totals(totals, out.snapshot.totals));
  if (double ms = 0; root["exit_gc_ms"].get(ms) == simdjson::SUCCESS) out.exit_gc_ms = ms;
  // Absent from an agent of an earlier memprof, which a process keeps mapped after a detach.
  // Absent from an agent of an earlier memprof, which a process keeps mapped after a detach.
  if (uint64_t n = 0; root["children"].get(n) == simdjson::SUCCESS) out.children = n;
  for (simdjson::dom::element problem : problems) {
    std::string_view text;
    if (problem.get(text) == simdjson::SUCCESS) out.problems.emplace_back(text);
  }
  for (simdjson::dom::element file : ruby_files) {
    std::string_view name;
    if (file.get(name)) return err("{} (ruby_files)", kMalformed);
    out.snapshot.ruby_files.emplace_back(name);
  }
  if (out.snapshot.ruby_files.empty()) out.snapshot.ruby_files.emplace_back();
  for (simdjson::dom::element element : sites)
    MEMPROF_TRY_STATUS(read_site(element, out.snapshot.ruby_files.size(), out.snapshot.sites.emplace_back()));
  return out;
}

}  // namespace memprof::attach
