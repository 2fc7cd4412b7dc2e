#include "attach/native_report.h"

#include <algorithm>
#include <functional>
#include <vector>

#include <fmt/format.h>

#include "core/elf/demangle.h"
#include "core/util/json_escape.h"
#include "core/util/path_name.h"
#include "heap/units.h"

namespace memprof::attach {
namespace {

using heap::bytes_text;
using heap::count_text;
using heap::counted_text;
using native::SiteRow;

// The sites' peak copies were taken at one moment, so they add up as the counts do.
void add_counts(SiteRow& sum, const SiteRow& row) {
  sum += row;
  sum.peak_live_bytes += row.peak_live_bytes;
}

// What sums sites into one row of a table (a library, a call site, ...), and what the row shows.
struct GroupName {
  std::string key;
  std::string label;
};

// Sites summed by a key, the `top` with the most `value` first; groups where it is 0 are left
// out.
struct Group {
  std::string label;
  SiteRow sum;
};
std::vector<Group> top_groups(const std::vector<SiteRow>& sites, const std::function<GroupName(const SiteRow&)>& name_of,
                              uint64_t SiteRow::*value, size_t top) {
  std::map<std::string, Group> sums;
  for (const SiteRow& site : sites) {
    GroupName name = name_of(site);
    auto [it, fresh] = sums.try_emplace(std::move(name.key));
    if (fresh) it->second.label = std::move(name.label);
    add_counts(it->second.sum, site);
  }
  std::vector<Group> groups;
  for (auto& [key, group] : sums)
    if (group.sum.*value > 0) groups.push_back(std::move(group));
  std::stable_sort(groups.begin(), groups.end(), [&](const Group& a, const Group& b) { return a.sum.*value > b.sum.*value; });
  if (groups.size() > top) groups.resize(top);
  return groups;
}

// Rows by call site: two functions whose short names are alike stay two rows.
auto call_site_of(FrameNamer& names) {
  return [&names](const SiteRow& site) {
    const SiteName& name = names(site.return_address);
    return GroupName{name.site, name.label};
  };
}

// The stack of a site, one frame per line under its first, indented to the key column.
std::string stack_text(const SiteRow& site, FrameNamer& names, std::string_view indent) {
  std::string out;
  for (size_t i = 1; i < site.frames.size(); ++i) out += fmt::format("{}  <- {}\n", indent, names(site.frames[i]).label);
  return out;
}

}  // namespace

SiteName name_site(const proc::SymbolIndex& symbols, uint64_t return_address, bool full_names) {
  auto unnamed = [](std::string site, std::string library) {
    std::string label = site;
    return SiteName{std::move(site), std::move(label), std::move(library), "", "", {}};
  };
  if (return_address == 0) return unnamed("(other sites: the site table was full)", "?");
  auto found = symbols.lookup(return_address);
  if (!found || found->object == nullptr) return unnamed(fmt::format("{:#x}", return_address), "?");
  std::string library(file_name_of(found->object->object.path));
  if (found->symbol == nullptr)
    return unnamed(fmt::format("{:#x} ({}+{:#x})", return_address, library, found->offset), library);
  // C++ names demangled for reading (leak_nodes(int)+0x49), and short in tables: a libstdc++
  // template's name alone is hundreds of characters.
  const std::string demangled = elf::demangle(found->symbol->name);
  const std::string short_name = demangled != found->symbol->name ? elf::short_function_name(demangled) : demangled;
  auto site_of = [&](std::string_view function) { return fmt::format("{}+{:#x} ({})", function, found->offset, library); };
  return {site_of(demangled), site_of(full_names ? demangled : short_name), library, std::string(found->symbol->name),
          short_name, {}};
}

const SiteName& FrameNamer::operator()(uint64_t address) {
  auto [it, fresh] = names_.try_emplace(address);
  if (!fresh) return it->second;
  it->second = name_site(symbols_, address, full_names_);
  if (sources_ != nullptr)
    if (auto source = sources_->find(address); source != sources_->end()) it->second.source = source->second;
  return it->second;
}

std::string ruby_line_of(const native::NativeSnapshot& snapshot, const SiteRow& site) {
  if (site.ruby_file == 0 || site.ruby_file >= snapshot.ruby_files.size()) return "";
  const std::string& file = snapshot.ruby_files[site.ruby_file];
  return site.ruby_line > 0 ? fmt::format("{}:{}", file, site.ruby_line) : file;
}

namespace {

// The "Live at the end (leaked)" tables: by library, call site, Ruby line and stack.
std::string leaked_tables(const native::NativeSnapshot& snapshot, FrameNamer& names,
                          const NativeReportOptions& options) {
  const std::vector<SiteRow>& sites = snapshot.sites;
  auto library = [&](const SiteRow& site) {
    const std::string& name = names(site.return_address).library;
    return GroupName{name, name};
  };
  std::string out = "\nLive at the end (leaked), by library\n      bytes     blocks  library\n";
  for (const Group& group : top_groups(sites, library, &SiteRow::live_bytes, options.top))
    out += fmt::format("{:>11} {:>10}  {}\n", group.sum.live_bytes, group.sum.live_blocks, group.label);

  out += "\nLive at the end (leaked), by call site\n      bytes     blocks  call site\n";
  for (const Group& group : top_groups(sites, call_site_of(names), &SiteRow::live_bytes, options.top))
    out += fmt::format("{:>11} {:>10}  {}\n", group.sum.live_bytes, group.sum.live_blocks, group.label);

  if (std::any_of(sites.begin(), sites.end(), [](const SiteRow& site) { return site.ruby_file != 0; })) {
    // The Ruby line running when the allocator was called, and the call site it reached.
    auto ruby_line = [&](const SiteRow& site) {
      std::string line = ruby_line_of(snapshot, site);
      if (line.empty()) line = "(no Ruby line)";
      const SiteName& name = names(site.return_address);
      return GroupName{fmt::format("{}  {}", line, name.site), fmt::format("{}  {}", line, name.label)};
    };
    out += "\nLive at the end (leaked), by Ruby line\n      bytes     blocks  Ruby line  call site\n";
    for (const Group& group : top_groups(sites, ruby_line, &SiteRow::live_bytes, options.top))
      out += fmt::format("{:>11} {:>10}  {}\n", group.sum.live_bytes, group.sum.live_blocks, group.label);
  }

  if (std::none_of(sites.begin(), sites.end(), [](const SiteRow& site) { return site.frames.size() > 1; }))
    return out;
  std::vector<const SiteRow*> stacks;
  for (const SiteRow& site : sites)
    if (site.live_bytes > 0) stacks.push_back(&site);
  std::stable_sort(stacks.begin(), stacks.end(),
                   [](const SiteRow* a, const SiteRow* b) { return a->live_bytes > b->live_bytes; });
  if (stacks.size() > options.top) stacks.resize(options.top);
  out += "\nLive at the end (leaked), by stack\n      bytes     blocks  stack (allocator's caller first)\n";
  for (const SiteRow* site : stacks) {
    std::string line = ruby_line_of(snapshot, *site);
    out += fmt::format("{:>11} {:>10}  {}\n", site->live_bytes, site->live_blocks, names(site->return_address).label);
    out += stack_text(*site, names, std::string(23, ' '));
    if (!line.empty()) out += fmt::format("{:23}  <- Ruby {}\n", "", line);
  }
  return out;
}

}  // namespace

std::string native_report_text(const NativeSnapshotView& view, const proc::SymbolIndex& symbols,
                               const NativeReportOptions& options) {
  const native::NativeSnapshot& snapshot = view.snapshot;
  const native::NativeTotals& t = snapshot.totals;
  std::string out = fmt::format(
      "In {:.1f} s: {} ({}), {} ({}), {}; live at the end: {} ({}); peak {}\n", options.seconds,
      counted_text(t.allocations, "allocation", "allocations"), bytes_text(t.allocated_bytes),
      counted_text(t.frees, "free", "frees"), bytes_text(t.freed_bytes),
      counted_text(t.temporaries, "temporary", "temporaries"), counted_text(t.live_blocks, "block", "blocks"),
      bytes_text(t.live_bytes), bytes_text(t.peak_live_bytes));
  if (t.unknown_frees > 0)
    out += fmt::format("{} frees of blocks allocated before the start (not counted above)\n",
                       count_text(t.unknown_frees));
  if (t.dropped > 0)
    out += fmt::format("{} allocations not recorded: the tracker had no memory left\n", count_text(t.dropped));
  // Empty tables say nothing a user can act on: one line says why there are none.
  if (t.allocations == 0) return out;

  FrameNamer names(symbols, nullptr, options.full_names);
  if (t.live_blocks == 0) out += "\nNothing allocated during the session was live at its end.\n";
  else out += leaked_tables(snapshot, names, options);

  out += "\nAllocated, by call site\n      bytes     blocks  temporary  call site\n";
  for (const Group& group : top_groups(snapshot.sites, call_site_of(names), &SiteRow::allocated_bytes, options.top))
    out += fmt::format("{:>11} {:>10} {:>10}  {}\n", group.sum.allocated_bytes, group.sum.allocations,
                       group.sum.temporaries, group.label);

  out += fmt::format("\nLive at the peak ({}), by call site\n      bytes  call site\n", bytes_text(t.peak_live_bytes));
  for (const Group& group : top_groups(snapshot.sites, call_site_of(names), &SiteRow::peak_live_bytes, options.top))
    out += fmt::format("{:>11}  {}\n", group.sum.peak_live_bytes, group.label);
  return out;
}

std::string native_report_json(const NativeSnapshotView& view, const proc::SymbolIndex& symbols,
                               const NativeReportOptions& options) {
  const native::NativeSnapshot& snapshot = view.snapshot;
  const native::NativeTotals& t = snapshot.totals;
  std::string out = fmt::format(
      "{{\"seconds\":{:.3f},\"totals\":{{\"allocations\":{},\"allocated_bytes\":{},\"frees\":{},\"freed_bytes\":{},"
      "\"temporaries\":{},\"live_blocks\":{},\"live_bytes\":{},\"peak_live_bytes\":{},\"unknown_frees\":{},"
      "\"dropped\":{},\"engine_bytes\":{}}},\"sites\":[",
      options.seconds, t.allocations, t.allocated_bytes, t.frees, t.freed_bytes, t.temporaries, t.live_blocks,
      t.live_bytes, t.peak_live_bytes, t.unknown_frees, t.dropped, t.engine_bytes);
  FrameNamer names(symbols, options.sources);
  for (size_t i = 0; i < snapshot.sites.size(); ++i) {
    const SiteRow& r = snapshot.sites[i];
    const SiteName& name = names(r.return_address);
    std::string ruby_line = ruby_line_of(snapshot, r);
    std::string stack;
    for (size_t f = 0; f < r.frames.size(); ++f) stack += (f ? "," : "") + json_quoted(names(r.frames[f]).site);
    out += fmt::format(
        "{}{{\"site\":{},\"library\":{},\"address\":{},\"source\":{},\"ruby\":{},\"stack\":[{}],\"allocations\":{},"
        "\"allocated_bytes\":{},\"frees\":{},\"freed_bytes\":{},\"temporaries\":{},\"live_blocks\":{},"
        "\"live_bytes\":{},\"peak_live_bytes\":{}}}",
        i ? "," : "", json_quoted(name.site), json_quoted(name.library), r.return_address,
        name.source.line == 0 ? "null" : json_quoted_bytes(fmt::format("{}:{}", name.source.file, name.source.line)),
        ruby_line.empty() ? "null" : json_quoted(ruby_line), stack, r.allocations, r.allocated_bytes, r.frees,
        r.freed_bytes, r.temporaries, r.live_blocks, r.live_bytes, r.peak_live_bytes);
  }
  return out + "]}\n";
}

}  // namespace memprof::attach
