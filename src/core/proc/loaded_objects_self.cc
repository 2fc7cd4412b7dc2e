// This process's objects through dl_iterate_phdr (the loader's own list, under its lock).
#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <climits>
#include <new>
#include <optional>

#include "core/proc/loaded_objects.h"
#include "core/util/proc_maps.h"

namespace memprof::proc {

namespace {

std::string self_executable_path() {
  char buffer[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

struct Collector {
  std::vector<LoadedObject> objects;
  uint64_t vdso_header = 0;
  bool out_of_memory = false;
};

int collect(dl_phdr_info* info, size_t, void* data) noexcept {
  auto* collector = static_cast<Collector*>(data);
  // This runs inside the loader with its lock held: an exception must not unwind through it.
  try {
    LoadedObject object;
    object.path = info->dlpi_name != nullptr ? info->dlpi_name : "";
    object.load_bias = info->dlpi_addr;
    object.is_main = collector->objects.empty();
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      const ElfW(Phdr)& phdr = info->dlpi_phdr[i];
      object.segments.push_back(elf::Segment{phdr.p_type, phdr.p_flags, phdr.p_offset, phdr.p_vaddr,
                                             phdr.p_filesz, phdr.p_memsz, phdr.p_align});
      if (phdr.p_type == PT_DYNAMIC) object.dynamic = info->dlpi_addr + phdr.p_vaddr;
      if (phdr.p_type == PT_LOAD && collector->vdso_header >= info->dlpi_addr + phdr.p_vaddr &&
          collector->vdso_header - (info->dlpi_addr + phdr.p_vaddr) < phdr.p_memsz) {
        object.is_vdso = true;
      }
    }
    collector->objects.push_back(std::move(object));
    return 0;
  } catch (const std::bad_alloc&) {
    collector->out_of_memory = true;
    return 1;
  }
}

// The loader keeps the name it was given, and dlopen("./plugin.so") or a relative
// LD_LIBRARY_PATH entry gives a relative one: the file as seen from the directory the process
// was in then, not necessarily now (servers chdir). The mapping of the object's dynamic section
// names it from the root.
void name_relative_objects_from_the_root(std::vector<LoadedObject>& objects) {
  std::optional<std::vector<MapEntry>> maps;
  for (LoadedObject& object : objects) {
    if (object.is_main || object.is_vdso || object.path.empty() || object.path.starts_with('/') ||
        object.dynamic == 0)
      continue;
    if (!maps) {
      auto read = read_self_maps();
      if (!read.ok()) return;  // the names stay as the loader has them
      maps = std::move(*read);
    }
    const MapEntry* mapping = find_mapping(*maps, object.dynamic);
    if (mapping != nullptr && (mapping->is_file() || mapping->is_deleted_file()))
      object.path = mapping->file_path();
  }
}

}  // namespace

std::vector<LoadedObject> self_objects() {
  Collector collector;
  collector.vdso_header = ::getauxval(AT_SYSINFO_EHDR);
  ::dl_iterate_phdr(collect, &collector);
  if (collector.out_of_memory) throw std::bad_alloc();
  // The loader names the main executable "" (it knows it only as argv[0]).
  if (!collector.objects.empty() && collector.objects.front().path.empty()) {
    collector.objects.front().path = self_executable_path();
  }
  name_relative_objects_from_the_root(collector.objects);
  // The executable through /proc/self/exe, as another process's through /proc/PID/exe: that
  // works even once its file was deleted or replaced.
  for (LoadedObject& object : collector.objects) object.file = object.is_main ? "/proc/self/exe" : object.path;
  return std::move(collector.objects);
}

}  // namespace memprof::proc
