#include "core/hook/loaded_object.h"

#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <span>
#include <type_traits>

namespace memprof::hook {
namespace {

std::span<const Elf64_Phdr> headers_of(const dl_phdr_info& info) {
  return {info.dlpi_phdr, info.dlpi_phnum};
}

// The identity of the object `info` describes, from its program headers alone: nothing of the
// object's own memory is read.
ObjectKey key_of(const dl_phdr_info& info) {
  for (const auto& p : headers_of(info))
    if (p.p_type == PT_DYNAMIC)
      return {info.dlpi_addr, reinterpret_cast<const Elf64_Dyn*>(info.dlpi_addr + p.p_vaddr)};
  return {info.dlpi_addr, nullptr};
}

// Calls `visit` for each loaded object until it returns true. dl_iterate_phdr holds the
// loader's list lock around every call, and dlclose unmaps an object only after taking it off
// that list under the same lock: what `visit` reads of an object cannot be unmapped meanwhile.
// After dl_iterate_phdr returns, nothing keeps it loaded. `visit` must not call into the
// loader's locking functions (dlopen, dlclose, dlsym), nor wait for a thread that might.
template <typename Visit>
void for_each_object(Visit&& visit) {
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        return (*static_cast<std::remove_reference_t<Visit>*>(data))(*info) ? 1 : 0;
      },
      &visit);
}

std::string program_path() {
  char buffer[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string("/proc/self/exe");
}

uint32_t gnu_hash(std::string_view name) {
  uint32_t h = 5381;
  for (unsigned char c : name) h = h * 33 + c;
  return h;
}

uint32_t sysv_hash(std::string_view name) {
  uint32_t h = 0;
  for (unsigned char c : name) {
    h = (h << 4) + c;
    uint32_t g = h & 0xf0000000;
    if (g) h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

// Reads PT_DYNAMIC into `object.tables`; any inconsistency becomes `object.problem`.
class DynamicReader {
 public:
  explicit DynamicReader(LoadedObject& object) : object_(object) {}

  Status read(const Elf64_Phdr& phdr) {
    uintptr_t start = object_.bias + phdr.p_vaddr;
    size_t entries = phdr.p_memsz / sizeof(Elf64_Dyn);
    if (!inside(start, entries * sizeof(Elf64_Dyn)))
      return err("PT_DYNAMIC at {:#x} lies outside the object's segments", start);
    const auto* dynamic = reinterpret_cast<const Elf64_Dyn*>(start);
    uint64_t values[DT_NUM] = {};
    uint64_t gnu_hash = 0, versym = 0, verneed = 0, verneednum = 0, verdef = 0, verdefnum = 0;
    for (size_t i = 0; i < entries && dynamic[i].d_tag != DT_NULL; ++i) {
      const Elf64_Dyn& d = dynamic[i];
      if (d.d_tag >= 0 && d.d_tag < DT_NUM) values[d.d_tag] = d.d_un.d_val;
      switch (d.d_tag) {
        case DT_GNU_HASH: gnu_hash = d.d_un.d_ptr; break;
        case DT_VERSYM: versym = d.d_un.d_ptr; break;
        case DT_VERNEED: verneed = d.d_un.d_ptr; break;
        case DT_VERNEEDNUM: verneednum = d.d_un.d_val; break;
        case DT_VERDEF: verdef = d.d_un.d_ptr; break;
        case DT_VERDEFNUM: verdefnum = d.d_un.d_val; break;
        default: break;
      }
    }
    auto& t = object_.tables;
    if (values[DT_PLTREL] != 0 && values[DT_PLTREL] != DT_RELA)
      return err("DT_PLTREL is {}, expected DT_RELA", values[DT_PLTREL]);
    t.strsz = values[DT_STRSZ];
    MEMPROF_TRY(strtab, table<char>("DT_STRTAB", values[DT_STRTAB], t.strsz));
    MEMPROF_TRY(symtab, table<Elf64_Sym>("DT_SYMTAB", values[DT_SYMTAB], sizeof(Elf64_Sym)));
    MEMPROF_TRY(jmprel, table<Elf64_Rela>("DT_JMPREL", values[DT_JMPREL], values[DT_PLTRELSZ]));
    MEMPROF_TRY(rela, table<Elf64_Rela>("DT_RELA", values[DT_RELA], values[DT_RELASZ]));
    MEMPROF_TRY(gnu, table<uint32_t>("DT_GNU_HASH", gnu_hash, 16));
    MEMPROF_TRY(sysv, table<uint32_t>("DT_HASH", values[DT_HASH], 8));
    MEMPROF_TRY(vneed, table<Elf64_Verneed>("DT_VERNEED", verneed, sizeof(Elf64_Verneed)));
    MEMPROF_TRY(vdef, table<Elf64_Verdef>("DT_VERDEF", verdef, sizeof(Elf64_Verdef)));
    t.strtab = strtab;
    t.symtab = symtab;
    t.jmprel = jmprel;
    t.jmprel_count = jmprel ? values[DT_PLTRELSZ] / sizeof(Elf64_Rela) : 0;
    t.rela = rela;
    t.rela_count = rela ? values[DT_RELASZ] / sizeof(Elf64_Rela) : 0;
    t.gnu_hash = gnu;
    t.sysv_hash = sysv;
    t.verneed = vneed;
    t.verneed_count = verneednum;
    t.verdef = vdef;
    t.verdef_count = verdefnum;
    MEMPROF_TRY(count, symbol_count());
    t.symbol_count = count;
    MEMPROF_TRY(vsym, table<Elf64_Half>("DT_VERSYM", versym, count * sizeof(Elf64_Half)));
    t.versym = vsym;
    if (t.symbol_count > 0 && (t.symtab == nullptr || t.strtab == nullptr))
      return err("relocations name symbols but DT_SYMTAB or DT_STRTAB is missing");
    if (!inside(reinterpret_cast<uintptr_t>(t.symtab), t.symbol_count * sizeof(Elf64_Sym)))
      return err("DT_SYMTAB with {} symbols lies outside the object's segments", t.symbol_count);
    return ok_status();
  }

 private:
  bool inside(uintptr_t start, size_t size) const {
    if (size == 0) return true;
    for (const auto& s : object_.segments)
      if (start >= s.start && start <= s.end && size <= s.end - start) return true;
    return false;
  }

  // glibc rewrites most d_ptr values to absolute addresses when it loads an object; the vdso
  // and some loaders keep them relative. Accept whichever lands inside the object.
  template <typename T>
  Result<const T*> table(const char* tag, uint64_t value, size_t size) {
    if (value == 0) return static_cast<const T*>(nullptr);
    if (inside(value, size)) return reinterpret_cast<const T*>(value);
    if (inside(object_.bias + value, size)) return reinterpret_cast<const T*>(object_.bias + value);
    return err("{} ({:#x}, {} bytes) lies outside the object's segments", tag, value, size);
  }

  Result<size_t> symbol_count() {
    const auto& t = object_.tables;
    // table() has checked that DT_HASH's two header words are inside the object.
    if (t.sysv_hash) return static_cast<size_t>(t.sysv_hash[1]);  // nchain == number of symbols
    if (t.gnu_hash) {
      const uint32_t* h = t.gnu_hash;
      uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
      const auto* buckets = reinterpret_cast<const uint32_t*>(
          reinterpret_cast<const uint64_t*>(h + 4) + bloom_size);
      if (!inside(reinterpret_cast<uintptr_t>(buckets), size_t{nbuckets} * 4))
        return err("DT_GNU_HASH buckets lie outside the object's segments");
      uint32_t last = 0;
      for (uint32_t b = 0; b < nbuckets; ++b) last = std::max(last, buckets[b]);
      if (last < symoffset) return static_cast<size_t>(symoffset);
      const uint32_t* chain = buckets + nbuckets;
      for (;; ++last) {
        if (!inside(reinterpret_cast<uintptr_t>(chain + (last - symoffset)), 4))
          return err("DT_GNU_HASH chain runs outside the object's segments");
        if (chain[last - symoffset] & 1) return static_cast<size_t>(last) + 1;
      }
    }
    size_t count = 0;
    for (auto [rels, n] : {std::pair{t.jmprel, t.jmprel_count}, std::pair{t.rela, t.rela_count}})
      for (size_t i = 0; i < n; ++i)
        count = std::max<size_t>(count, ELF64_R_SYM(rels[i].r_info) + 1);
    return count;
  }

  LoadedObject& object_;
};

ObjectRole classify(const LoadedObject& object, size_t index) {
  static const uintptr_t loader = ::getauxval(AT_BASE);
  static const uintptr_t vdso = ::getauxval(AT_SYSINFO_EHDR);
  if (object.contains(reinterpret_cast<uintptr_t>(&classify))) return ObjectRole::kHookLibrary;
  if (loader != 0 && object.contains(loader)) return ObjectRole::kLoader;
  if (vdso != 0 && object.contains(vdso)) return ObjectRole::kVdso;
  return index == 0 ? ObjectRole::kProgram : ObjectRole::kLibrary;
}

// Called inside for_each_object only (see there).
LoadedObject read_object(const dl_phdr_info& info, size_t index) {
  LoadedObject object;
  object.path = index == 0 ? program_path() : (info.dlpi_name ? info.dlpi_name : "");
  object.bias = info.dlpi_addr;
  object.dynamic = key_of(info).dynamic;
  const Elf64_Phdr* dynamic = nullptr;
  const Elf64_Phdr* eh_frame_hdr = nullptr;
  for (const auto& p : headers_of(info)) {
    if (p.p_type == PT_LOAD)
      object.segments.push_back({object.bias + p.p_vaddr, object.bias + p.p_vaddr + p.p_memsz, p.p_flags});
    if (p.p_type == PT_DYNAMIC) dynamic = &p;
    if (p.p_type == PT_GNU_EH_FRAME) eh_frame_hdr = &p;
  }
  if (eh_frame_hdr != nullptr && eh_frame_hdr->p_memsz > 0) {
    uintptr_t start = object.bias + eh_frame_hdr->p_vaddr;
    uintptr_t end = start + eh_frame_hdr->p_memsz;
    for (const auto& s : object.segments)
      if ((s.flags & PF_R) && start >= s.start && end <= s.end) object.eh_frame_hdr = {start, end, s.flags};
  }
  object.role = classify(object, index);
  if (dynamic == nullptr) {
    object.problem = "no PT_DYNAMIC";
  } else if (Status status = DynamicReader(object).read(*dynamic); !status.ok()) {
    object.problem = status.message();
    object.tables = {};
  }
  return object;
}

// Whether `size` bytes at `p` lie inside `object` (both ends in one of its segments).
bool holds(const LoadedObject& object, const void* p, size_t size) {
  auto a = reinterpret_cast<uintptr_t>(p);
  return object.contains(a) && object.contains(a + size - 1);
}

}  // namespace

bool LoadedObject::contains(uintptr_t address) const {
  for (const auto& s : segments)
    if (address >= s.start && address < s.end) return true;
  return false;
}

std::string_view LoadedObject::symbol_name(uint32_t index) const {
  if (index >= tables.symbol_count || tables.strtab == nullptr) return {};
  uint32_t offset = tables.symtab[index].st_name;
  if (offset >= tables.strsz) return {};
  const char* name = tables.strtab + offset;
  return {name, ::strnlen(name, tables.strsz - offset)};
}

std::string_view LoadedObject::needed_version(uint32_t symbol_index) const {
  if (tables.versym == nullptr || symbol_index >= tables.symbol_count) return {};
  uint16_t version = tables.versym[symbol_index] & 0x7fff;
  if (version < 2) return {};  // local or global (unversioned)
  const auto* need = tables.verneed;
  for (size_t i = 0; need && i < tables.verneed_count && holds(*this, need, sizeof *need); ++i) {
    const auto* aux = reinterpret_cast<const Elf64_Vernaux*>(
        reinterpret_cast<const char*>(need) + need->vn_aux);
    for (size_t j = 0; j < need->vn_cnt && holds(*this, aux, sizeof *aux); ++j) {
      if (aux->vna_other == version && aux->vna_name < tables.strsz)
        return tables.strtab + aux->vna_name;
      aux = reinterpret_cast<const Elf64_Vernaux*>(reinterpret_cast<const char*>(aux) + aux->vna_next);
    }
    if (need->vn_next == 0) break;
    need = reinterpret_cast<const Elf64_Verneed*>(reinterpret_cast<const char*>(need) + need->vn_next);
  }
  return {};
}

std::string_view LoadedObject::defined_version(uint32_t symbol_index) const {
  if (tables.versym == nullptr || symbol_index >= tables.symbol_count) return {};
  uint16_t version = tables.versym[symbol_index] & 0x7fff;
  if (version < 2) return {};
  const auto* def = tables.verdef;
  for (size_t i = 0; def && i < tables.verdef_count && holds(*this, def, sizeof *def); ++i) {
    const auto* aux = reinterpret_cast<const Elf64_Verdaux*>(
        reinterpret_cast<const char*>(def) + def->vd_aux);
    if (def->vd_ndx == version && holds(*this, aux, sizeof *aux) && aux->vda_name < tables.strsz)
      return tables.strtab + aux->vda_name;
    if (def->vd_next == 0) break;
    def = reinterpret_cast<const Elf64_Verdef*>(reinterpret_cast<const char*>(def) + def->vd_next);
  }
  return {};
}

bool LoadedObject::version_hidden(uint32_t symbol_index) const {
  return tables.versym != nullptr && symbol_index < tables.symbol_count &&
         (tables.versym[symbol_index] & 0x8000) != 0;
}

std::vector<uint32_t> LoadedObject::find_symbols(std::string_view name) const {
  std::vector<uint32_t> found;
  if (tables.symtab == nullptr) return found;
  if (const uint32_t* h = tables.gnu_hash) {
    uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2], bloom_shift = h[3];
    const auto* bloom = reinterpret_cast<const uint64_t*>(h + 4);
    const auto* buckets = reinterpret_cast<const uint32_t*>(bloom + bloom_size);
    const uint32_t* chain = buckets + nbuckets;
    uint32_t hash = gnu_hash(name);
    if (nbuckets == 0 || bloom_size == 0) return found;
    uint64_t word = bloom[(hash / 64) % bloom_size];
    uint64_t mask = (uint64_t{1} << (hash % 64)) | (uint64_t{1} << ((hash >> bloom_shift) % 64));
    if ((word & mask) != mask) return found;
    for (uint32_t i = buckets[hash % nbuckets]; i >= symoffset && i < tables.symbol_count; ++i) {
      uint32_t entry = chain[i - symoffset];
      if ((entry | 1) == (hash | 1) && symbol_name(i) == name) found.push_back(i);
      if (entry & 1) break;
    }
    return found;
  }
  if (const uint32_t* h = tables.sysv_hash) {
    uint32_t nbucket = h[0], nchain = h[1];
    const uint32_t* buckets = h + 2;
    const uint32_t* chains = buckets + nbucket;
    if (nbucket == 0) return found;
    for (uint32_t i = buckets[sysv_hash(name) % nbucket], steps = 0;
         i != STN_UNDEF && i < nchain && steps < nchain; i = chains[i], ++steps)
      if (symbol_name(i) == name) found.push_back(i);
    return found;
  }
  for (uint32_t i = 1; i < tables.symbol_count; ++i)
    if (symbol_name(i) == name) found.push_back(i);
  return found;
}

Result<std::vector<LoadedObject>> loaded_objects() {
  std::vector<LoadedObject> objects;
  for_each_object([&](const dl_phdr_info& info) {
    objects.push_back(read_object(info, objects.size()));
    return false;
  });
  if (objects.empty()) return err("dl_iterate_phdr reported no loaded object");
  return objects;
}

bool is_loaded(const std::vector<LoadedObject>& objects, const ObjectKey& key) {
  return std::any_of(objects.begin(), objects.end(),
                     [&](const LoadedObject& o) { return o.key() == key; });
}

bool is_loaded(const ObjectKey& key) {
  bool found = false;
  for_each_object([&](const dl_phdr_info& info) { return found = key_of(info) == key; });
  return found;
}

Result<ObjectKey> object_key_containing(const void* address) {
  const auto a = reinterpret_cast<uintptr_t>(address);
  std::optional<ObjectKey> found;
  for_each_object([&](const dl_phdr_info& info) {
    for (const auto& p : headers_of(info))
      if (p.p_type == PT_LOAD && a - (info.dlpi_addr + p.p_vaddr) < p.p_memsz) found = key_of(info);
    return found.has_value();
  });
  if (!found) return err("address {} is not inside any loaded object", address);
  return *found;
}

Result<LoadedObject> object_containing(const void* address) {
  MEMPROF_TRY(objects, loaded_objects());
  for (auto& object : objects)
    if (object.contains(reinterpret_cast<uintptr_t>(address))) return std::move(object);
  return err("address {} is not inside any loaded object", address);
}

}  // namespace memprof::hook
