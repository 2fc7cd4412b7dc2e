#include "attach/source_lines.h"

#ifdef MEMPROF_HAVE_LIBDW
#include <elfutils/libdwfl.h>

#include <memory>

#include "core/util/runtime_library.h"
#endif

namespace memprof::attach {

#ifdef MEMPROF_HAVE_LIBDW
namespace {

// libdw's functions, from libdw.so.1 opened at the first use (runtime_library.h): linked, it
// and the libraries it needs (libelf, libbz2, ...) were mapped at every start of memprof.
#define MEMPROF_DW_FUNCTIONS(X)                                                                 \
  X(dwfl_begin) X(dwfl_end) X(dwfl_report_begin) X(dwfl_report_end) X(dwfl_linux_proc_report) \
  X(dwfl_linux_proc_find_elf) X(dwfl_standard_find_debuginfo) X(dwfl_addrmodule)              \
  X(dwfl_module_getsrc) X(dwfl_lineinfo)
MEMPROF_RUNTIME_LIBRARY(DwLibrary, "libdw.so.1", MEMPROF_DW_FUNCTIONS);

}  // namespace

std::map<uint64_t, SourceLine> source_lines_of(pid_t pid, const std::vector<uint64_t>& return_addresses) {
  std::map<uint64_t, SourceLine> out;
  if (return_addresses.empty()) return out;
  const Result<DwLibrary>& libdw = DwLibrary::get();
  if (!libdw) return out;  // no libdw1 installed: the sites keep their function+offset names
  const DwLibrary& dw = *libdw;
  const Dwfl_Callbacks callbacks = {
      .find_elf = dw.dwfl_linux_proc_find_elf,
      .find_debuginfo = dw.dwfl_standard_find_debuginfo,
      .section_address = nullptr,
      .debuginfo_path = nullptr,
  };
  std::unique_ptr<Dwfl, decltype(dw.dwfl_end)> session(dw.dwfl_begin(&callbacks), dw.dwfl_end);
  if (!session) return out;
  dw.dwfl_report_begin(session.get());
  int reported = dw.dwfl_linux_proc_report(session.get(), pid);
  dw.dwfl_report_end(session.get(), nullptr, nullptr);
  if (reported != 0) return out;
  for (uint64_t address : return_addresses) {
    if (address == 0 || out.contains(address)) continue;
    // The call instruction ends at the return address: look up the byte before it.
    Dwarf_Addr call = address - 1;
    Dwfl_Module* module = dw.dwfl_addrmodule(session.get(), call);
    Dwfl_Line* line = module != nullptr ? dw.dwfl_module_getsrc(module, call) : nullptr;
    int number = 0;
    const char* file = line != nullptr ? dw.dwfl_lineinfo(line, nullptr, &number, nullptr, nullptr, nullptr) : nullptr;
    if (file != nullptr && number > 0) out[address] = {file, static_cast<uint32_t>(number)};
  }
  return out;
}
#else
std::map<uint64_t, SourceLine> source_lines_of(pid_t, const std::vector<uint64_t>&) { return {}; }
#endif

}  // namespace memprof::attach
