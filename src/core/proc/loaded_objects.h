// The ELF objects loaded in a process: the main executable, shared libraries, the dynamic loader
// and the vdso, each with its load bias (runtime address = file address + bias).
//
// This process: dl_iterate_phdr. Another process: the dynamic loader's own list, read through
// process_vm_readv — the main executable's PT_DYNAMIC holds DT_DEBUG -> struct r_debug -> r_map, the
// link_map chain (l_addr, l_name, l_ld, l_next). When that list is not available (static executable,
// process not past the loader yet), objects are derived from /proc/PID/maps instead.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/elf/elf_types.h"
#include "core/util/result.h"

namespace memprof::proc {

struct LoadedObject {
  std::string path;         // as the loader knows it; the main executable's real path
  // Where this process opens the object's file: `path` itself in this process; in another,
  // /proc/PID/root/PATH (its mounts may be its own), or /proc/PID/map_files/START-END when the
  // file was deleted since it was mapped (an upgraded libc: the path then names another file,
  // or none). The main executable through /proc/self/exe or /proc/PID/exe.
  std::string file;
  uint64_t load_bias = 0;   // l_addr / dlpi_addr
  uint64_t dynamic = 0;     // runtime address of PT_DYNAMIC (l_ld), 0 when none
  std::vector<elf::Segment> segments;  // program headers (from memory for this process)
  bool is_main = false;
  bool is_vdso = false;
};

// Objects of this process, in load order (main executable first).
std::vector<LoadedObject> self_objects();

// How the objects of another process were found.
enum class ObjectSource { kLinkMap, kMaps };

struct ProcessObjects {
  std::vector<LoadedObject> objects;
  ObjectSource source = ObjectSource::kLinkMap;
};

// Objects of process `pid`. Errors: "no such process: PID", permission (with the reason from
// explain_access_denied), or an unreadable main executable.
Result<ProcessObjects> process_objects(pid_t pid);

}  // namespace memprof::proc
