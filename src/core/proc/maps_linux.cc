// /proc/PID/maps of another process: the parser is the util area's (core/util/proc_maps.h); this
// adds the explanations of a missing or refused process.
#include <cerrno>

#include "core/proc/maps.h"
#include "core/proc/process_access.h"
#include "core/util/proc_file.h"

namespace memprof::proc {

Result<std::vector<MapEntry>> read_maps(pid_t pid) {
  MEMPROF_TRY_STATUS(check_process_exists(pid));
  int error_number = 0;
  auto text = read_proc_file(fmt::format("/proc/{}/maps", pid), &error_number);
  if (!text) {
    if (error_number == ENOENT || error_number == ESRCH) return err("no such process: {}", pid);
    if (error_number == EACCES || error_number == EPERM) {
      return err("cannot read the memory map of process {}: {}", pid, explain_access_denied(pid));
    }
    return text.error();
  }
  return parse_maps(*text);
}

}  // namespace memprof::proc
