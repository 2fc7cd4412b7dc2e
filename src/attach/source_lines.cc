#include "attach/source_lines.h"

#ifdef MEMPROF_HAVE_LIBDW
#include <elfutils/libdwfl.h>
#endif

#include <memory>

namespace memprof::attach {

#ifdef MEMPROF_HAVE_LIBDW
std::map<uint64_t, SourceLine> source_lines_of(pid_t pid, const std::vector<uint64_t>& return_addresses) {
  std::map<uint64_t, SourceLine> out;
  if (return_addresses.empty()) return out;
  static const Dwfl_Callbacks callbacks = {
      .find_elf = dwfl_linux_proc_find_elf,
      .find_debuginfo = dwfl_standard_find_debuginfo,
      .section_address = nullptr,
      .debuginfo_path = nullptr,
  };
  std::unique_ptr<Dwfl, decltype(&dwfl_end)> session(dwfl_begin(&callbacks), &dwfl_end);
  if (!session) return out;
  dwfl_report_begin(session.get());
  int reported = dwfl_linux_proc_report(session.get(), pid);
  dwfl_report_end(session.get(), nullptr, nullptr);
  if (reported != 0) return out;
  for (uint64_t address : return_addresses) {
    if (address == 0 || out.contains(address)) continue;
    // The call instruction ends at the return address: look up the byte before it.
    Dwarf_Addr call = address - 1;
    Dwfl_Module* module = dwfl_addrmodule(session.get(), call);
    Dwfl_Line* line = module != nullptr ? dwfl_module_getsrc(module, call) : nullptr;
    int number = 0;
    const char* file = line != nullptr ? dwfl_lineinfo(line, nullptr, &number, nullptr, nullptr, nullptr) : nullptr;
    if (file != nullptr && number > 0) out[address] = {file, static_cast<uint32_t>(number)};
  }
  return out;
}
#else
std::map<uint64_t, SourceLine> source_lines_of(pid_t, const std::vector<uint64_t>&) { return {}; }
#endif

}  // namespace memprof::attach
