// Another process's objects: the dynamic loader's link_map list read with process_vm_readv.
//
// The main executable's PT_DYNAMIC has a DT_DEBUG entry that the loader fills with the address of
// its struct r_debug; r_debug.r_map heads the link_map chain in load order. When DT_DEBUG is empty
// the loader's exported _r_debug is used instead; when neither is there (a static executable, or a
// process that has not run the loader yet), the objects come from /proc/PID/maps.
#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <unordered_set>

#include "core/elf/elf_file.h"
#include "core/elf/object_symbols.h"
#include "core/proc/loaded_objects.h"
#include "core/proc/maps.h"
#include "core/proc/process_access.h"
#include "core/proc/remote_memory.h"

namespace memprof::proc {

namespace {

// A link_map chain longer than this is corrupt (or we are reading it while it changes).
constexpr size_t kMaxObjects = 65536;

// The public prefix of glibc's struct link_map (<link.h>): all we read.
struct RemoteLinkMap {
  uint64_t l_addr;
  uint64_t l_name;
  uint64_t l_ld;
  uint64_t l_next;
  uint64_t l_prev;
};
static_assert(sizeof(RemoteLinkMap) == 5 * sizeof(void*));

Result<std::string> executable_path(pid_t pid) {
  char buffer[PATH_MAX];
  std::string link = fmt::format("/proc/{}/exe", pid);
  ssize_t n = ::readlink(link.c_str(), buffer, sizeof(buffer) - 1);
  if (n < 0) {
    if (errno == ENOENT || errno == ESRCH) {
      int error_number = errno;
      MEMPROF_TRY_STATUS(check_process_exists(pid));
      // Kernel threads have no executable; neither has a process whose exe lies outside our mount
      // namespace.
      return err("process {}: cannot resolve {}: {}", pid, link, std::strerror(error_number));
    }
    if (errno == EACCES || errno == EPERM) {
      return err("cannot inspect process {}: {}", pid, explain_access_denied(pid));
    }
    return err("{}: {}", link, std::strerror(errno));
  }
  return std::string(buffer, static_cast<size_t>(n));
}

// Load bias of the object mapped from `path`: where its file offset 0 is mapped, minus the page
// of its first PT_LOAD.
std::optional<uint64_t> bias_from_maps(const std::vector<MapEntry>& maps, const std::string& path,
                                       const elf::ElfFile& file) {
  for (const auto& entry : maps) {
    if (entry.path == path && entry.offset == 0) return entry.start - file.first_load_address();
  }
  return std::nullopt;
}

// Where to open the file of an object one of whose mappings is `mapped`: through the process's
// root, or, once the file was deleted since it was mapped (an upgrade renamed a new file over
// it: the path names another object now, or nothing), through that mapping's map_files entry,
// which opens the mapped file itself (root only: CAP_SYS_ADMIN).
std::string file_of(pid_t pid, const std::string& root, const std::string& path, const MapEntry* mapped) {
  if (mapped != nullptr && mapped->is_deleted_file())
    return fmt::format("/proc/{}/map_files/{:x}-{:x}", pid, mapped->start, mapped->end);
  return root + path;
}

std::vector<elf::Segment> segments_of(const std::string& path) {
  auto file = elf::ElfFile::open(path);
  return file ? file->segments() : std::vector<elf::Segment>{};
}

// The r_debug address: DT_DEBUG in the executable's dynamic section as the process sees it.
Result<uint64_t> r_debug_from_dynamic(const RemoteMemory& memory, const elf::ElfFile& exe,
                                      uint64_t bias) {
  for (const auto& segment : exe.segments()) {
    if (segment.type != PT_DYNAMIC) continue;
    uint64_t count = segment.memsz / sizeof(Elf64_Dyn);
    for (uint64_t i = 0; i < count; ++i) {
      MEMPROF_TRY(dyn, memory.read_value<Elf64_Dyn>(bias + segment.vaddr + i * sizeof(Elf64_Dyn)));
      if (dyn.d_tag == DT_NULL) break;
      if (dyn.d_tag == DT_DEBUG) return uint64_t{dyn.d_un.d_ptr};
    }
  }
  return uint64_t{0};
}

// The loader's exported _r_debug, for executables without DT_DEBUG.
std::optional<uint64_t> r_debug_from_loader(pid_t pid, const std::vector<MapEntry>& maps,
                                            const elf::ElfFile& exe, const std::string& root) {
  auto interp = std::find_if(exe.segments().begin(), exe.segments().end(),
                             [](const elf::Segment& s) { return s.type == PT_INTERP; });
  if (interp == exe.segments().end()) return std::nullopt;
  auto data = elf::slice(exe.bytes(), interp->offset, interp->filesz);
  auto loader_path = data ? elf::cstring_at(*data, 0) : std::nullopt;
  if (!loader_path) return std::nullopt;
  // The map names the loader by its real path; PT_INTERP may be a symlink to it.
  std::error_code ec;
  std::string real = std::filesystem::canonical(root + std::string(*loader_path), ec).string();
  for (const auto& entry : maps) {
    if (entry.offset != 0 || !(entry.is_file() || entry.is_deleted_file())) continue;
    const std::string path(entry.file_path());
    if (root + path != real && path != *loader_path) continue;
    auto symbols = elf::ObjectSymbols::load(file_of(pid, root, path, &entry), false);
    if (!symbols) return std::nullopt;
    auto found = symbols->find("_r_debug");
    if (found.empty()) return std::nullopt;
    return entry.start - symbols->file().first_load_address() + found.front()->address;
  }
  return std::nullopt;
}

Result<std::vector<LoadedObject>> walk_link_map(const RemoteMemory& memory, uint64_t r_debug_address,
                                                const std::vector<MapEntry>& maps,
                                                const std::string& exe_path, const std::string& root) {
  MEMPROF_TRY(debug, memory.read_value<r_debug>(r_debug_address));
  std::vector<LoadedObject> objects;
  std::unordered_set<uint64_t> seen;
  for (uint64_t node = reinterpret_cast<uint64_t>(debug.r_map); node != 0;) {
    if (!seen.insert(node).second || objects.size() >= kMaxObjects) {
      return err("process {}: link_map list is corrupt (cycle or too long)", memory.pid());
    }
    MEMPROF_TRY(link, memory.read_value<RemoteLinkMap>(node));
    LoadedObject object;
    object.load_bias = link.l_addr;
    object.dynamic = link.l_ld;
    object.is_main = objects.empty();
    if (link.l_name != 0) {
      MEMPROF_TRY(name, memory.read_cstring(link.l_name));
      object.path = std::move(name);
    }
    const MapEntry* dynamic_map = link.l_ld != 0 ? find_mapping(maps, link.l_ld) : nullptr;
    object.is_vdso = dynamic_map != nullptr && dynamic_map->path == "[vdso]";
    // The loader keeps the name it was given, and dlopen("./plugin.so") or a relative
    // LD_LIBRARY_PATH entry gives a relative one: the file as seen from the directory the
    // process was in then. The mapping of its dynamic section names it from the root.
    if (!object.is_main && !object.path.starts_with('/') && dynamic_map != nullptr &&
        (dynamic_map->is_file() || dynamic_map->is_deleted_file()))
      object.path = dynamic_map->file_path();
    // The loader knows the main executable by an empty name.
    if (object.is_main && object.path.empty()) object.path = exe_path;
    object.file = object.is_main ? fmt::format("/proc/{}/exe", memory.pid())
                                 : file_of(memory.pid(), root, object.path, dynamic_map);
    if (!object.is_vdso && !object.path.empty()) object.segments = segments_of(object.file);
    objects.push_back(std::move(object));
    node = link.l_next;
  }
  return objects;
}

// Objects from the maps alone: every file mapped from offset 0 that parses as ELF, plus the vdso.
std::vector<LoadedObject> objects_from_maps(pid_t pid, const std::vector<MapEntry>& maps,
                                            const std::string& exe_path, const std::string& root) {
  std::vector<LoadedObject> objects;
  std::unordered_set<std::string> seen;
  for (const auto& entry : maps) {
    if (entry.offset != 0 || !(entry.is_file() || entry.is_deleted_file() || entry.path == "[vdso]")) continue;
    std::string path(entry.file_path());
    if (!seen.insert(path).second) continue;
    LoadedObject object;
    object.path = path;
    if (entry.path == "[vdso]") {
      object.is_vdso = true;
      object.load_bias = entry.start;  // corrected from the image's headers by the symbol index
      objects.push_back(std::move(object));
      continue;
    }
    object.is_main = path == exe_path || entry.path == exe_path;  // readlink says " (deleted)" too
    object.file = object.is_main ? fmt::format("/proc/{}/exe", pid) : file_of(pid, root, path, &entry);
    auto file = elf::ElfFile::open(object.file);
    if (!file) continue;  // a mapped data file, not an ELF object
    object.load_bias = entry.start - file->first_load_address();
    object.segments = file->segments();
    for (const auto& segment : object.segments) {
      if (segment.type == PT_DYNAMIC) object.dynamic = object.load_bias + segment.vaddr;
    }
    objects.push_back(std::move(object));
  }
  // Main executable first, as with the link_map.
  std::stable_partition(objects.begin(), objects.end(), [](const LoadedObject& o) { return o.is_main; });
  return objects;
}

}  // namespace

Result<ProcessObjects> process_objects(pid_t pid) {
  MEMPROF_TRY(maps, read_maps(pid));
  MEMPROF_TRY(exe_path, executable_path(pid));
  // Files are opened through the process's root so that processes in containers work.
  std::string root = fmt::format("/proc/{}/root", pid);
  MEMPROF_TRY(exe, elf::ElfFile::open(fmt::format("/proc/{}/exe", pid)));
  auto bias = bias_from_maps(maps, exe_path, exe);

  RemoteMemory memory(pid);
  uint64_t r_debug_address = 0;
  if (bias) {
    MEMPROF_TRY(from_dynamic, r_debug_from_dynamic(memory, exe, *bias));
    r_debug_address = from_dynamic;
  }
  if (r_debug_address == 0) r_debug_address = r_debug_from_loader(pid, maps, exe, root).value_or(0);
  if (r_debug_address != 0) {
    MEMPROF_TRY(objects, walk_link_map(memory, r_debug_address, maps, exe_path, root));
    // r_map is still empty while the loader has not started its work.
    if (!objects.empty()) return ProcessObjects{std::move(objects), ObjectSource::kLinkMap};
  }
  return ProcessObjects{objects_from_maps(pid, maps, exe_path, root), ObjectSource::kMaps};
}

}  // namespace memprof::proc
