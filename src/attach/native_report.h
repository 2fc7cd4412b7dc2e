// The CLI's side of `memprof native`: turning sites (stacks of return addresses in the target,
// and Ruby lines) into the report a user reads: what is still live at the end (leaked), by
// library, call site, Ruby line and stack, what was allocated and how much of it was
// temporary, and the peak.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "attach/native_snapshot_json.h"
#include "attach/source_lines.h"
#include "core/proc/symbol_index.h"

namespace memprof::attach {

// A code address as people read it: "leak_blocks+0x1e (libleaky.so)", its function and library.
struct SiteName {
  std::string site;      // C++ names demangled in full: what tells sites apart (and --json shows)
  std::string label;     // what a text table shows: C++ names short (elf::short_function_name)
  std::string library;   // the object's file name; "?" when no object holds the address
  std::string function;  // the symbol; empty when the object has none there
  std::string short_function;  // the symbol as read: a C++ name demangled and short
  SourceLine source;     // the call's file:line when debug information said (source_lines.h)
};
// `full_names`: the label too has the full C++ name.
SiteName name_site(const proc::SymbolIndex& symbols, uint64_t return_address, bool full_names = false);

// Names each address once (the frames of many stacks repeat).
class FrameNamer {
 public:
  explicit FrameNamer(const proc::SymbolIndex& symbols, const std::map<uint64_t, SourceLine>* sources = nullptr,
                      bool full_names = false)
      : symbols_(symbols), sources_(sources), full_names_(full_names) {}
  const SiteName& operator()(uint64_t address);

 private:
  const proc::SymbolIndex& symbols_;
  const std::map<uint64_t, SourceLine>* sources_;
  bool full_names_;
  std::map<uint64_t, SiteName> names_;
};

// "app/models/user.rb:12", or "" for a site without a Ruby line.
std::string ruby_line_of(const native::NativeSnapshot& snapshot, const native::SiteRow& site);

struct NativeReportOptions {
  size_t top = 20;
  double seconds = 0;  // how long the session ran
  const std::map<uint64_t, SourceLine>* sources = nullptr;  // of the return addresses, if read
  bool full_names = false;  // C++ names in full in the text tables (--full-names)
};

std::string native_report_text(const NativeSnapshotView& view, const proc::SymbolIndex& symbols,
                               const NativeReportOptions& options);
// {"seconds", "totals": {...}, "sites": [{"site", "library", "address", "source", "ruby", "stack",
// counts...}]}, every site ("source": "file.c:12" or null).
std::string native_report_json(const NativeSnapshotView& view, const proc::SymbolIndex& symbols,
                               const NativeReportOptions& options);

}  // namespace memprof::attach
