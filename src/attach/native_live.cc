#include "attach/native_live.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

#include "attach/agent_client.h"
#include "attach/native_report.h"
#include "attach/recorded_process.h"
#include "native/native_wire.h"

namespace memprof::attach {

NativeLiveSource::NativeLiveSource(pid_t pid) : pid_(pid), symbols_(proc::SymbolIndex::build({}, 0, false)) {}

Result<std::unique_ptr<NativeLiveSource>> NativeLiveSource::start(pid_t pid) {
  MEMPROF_TRY(process, RecordedProcess::open(pid, {}));
  auto started = recording_request(process.pid(), "native-start", native::encode_native_request({}));
  if (!started.ok()) return started.error();
  std::unique_ptr<NativeLiveSource> source(new NativeLiveSource(pid));
  if (auto symbols = proc::SymbolIndex::for_process(pid); symbols.ok()) source->symbols_ = std::move(*symbols);
  return source;
}

NativeLiveSource::~NativeLiveSource() { (void)recording_request(pid_, "native-stop"); }

Result<LiveSnapshot> NativeLiveSource::read() {
  MEMPROF_TRY(reply, recording_request(pid_, "native-read"));
  MEMPROF_TRY(view, parse_native_snapshot(reply));
  // A library loaded since the last reading: read the process's objects again.
  for (const native::SiteRow& site : view.snapshot.sites) {
    if (site.return_address == 0 || symbols_.lookup(site.return_address)) continue;
    if (auto symbols = proc::SymbolIndex::for_process(pid_); symbols.ok()) symbols_ = std::move(*symbols);
    break;
  }
  double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return live_snapshot_of(view.snapshot, symbols_, now);
}

LiveSnapshot live_snapshot_of(const native::NativeSnapshot& snapshot, const proc::SymbolIndex& symbols, double time) {
  LiveSnapshot out;
  out.native = true;
  out.time = time;
  out.total_allocated = snapshot.totals.allocations;
  FrameNamer names(symbols);
  std::map<std::tuple<std::string, int, std::string>, LiveGroup> groups;
  for (const native::SiteRow& site : snapshot.sites) {
    if (site.live_blocks == 0) continue;
    bool has_line = site.ruby_file != 0 && site.ruby_file < snapshot.ruby_files.size();
    std::string file = has_line ? snapshot.ruby_files[site.ruby_file] : "(no Ruby line)";
    int line = has_line ? static_cast<int>(site.ruby_line) : -1;
    // Short C++ names (rows of instantiations alike at one offset are summed: "<...>" says so).
    const std::string& call_site = names(site.return_address).label;
    auto [it, fresh] = groups.try_emplace({file, line, call_site}, LiveGroup{file, line, call_site, 0, 0});
    it->second.count += site.live_blocks;
    it->second.bytes += site.live_bytes;
  }
  for (auto& [key, group] : groups) out.groups.push_back(std::move(group));
  out.ruby_lines = std::any_of(out.groups.begin(), out.groups.end(), [](const LiveGroup& g) { return g.line >= 0; });
  return out;
}

}  // namespace memprof::attach
