// Process-wide symbol lookups over every loaded object.
#include "core/proc/symbol_index.h"

#include <elf.h>
#include <unistd.h>

#include "core/proc/maps.h"
#include "core/proc/process_access.h"
#include "core/proc/remote_memory.h"

namespace memprof::proc {

namespace {

// The vdso exists only in memory: copy its image out of the process and parse that.
Result<elf::ObjectSymbols> vdso_symbols(pid_t pid, LoadedObject& object) {
  MEMPROF_TRY(maps, read_maps(pid));
  for (const auto& entry : maps) {
    if (entry.path != "[vdso]") continue;
    std::vector<unsigned char> image(entry.end - entry.start);
    MEMPROF_TRY_STATUS(RemoteMemory(pid).read(entry.start, image));
    MEMPROF_TRY(file, elf::ElfFile::parse_owned(std::move(image), "[vdso]"));
    // The maps fallback only knows where the image starts; its headers give the bias.
    object.load_bias = entry.start - file.first_load_address();
    if (object.segments.empty()) object.segments = file.segments();
    return elf::ObjectSymbols::from_file(std::move(file));
  }
  return err("process {} has no [vdso] mapping", pid);
}

bool in_loaded_segment(const LoadedObject& object, uint64_t address) {
  if (address < object.load_bias) return false;
  uint64_t file_address = address - object.load_bias;
  for (const auto& segment : object.segments) {
    if (segment.type == PT_LOAD && file_address >= segment.vaddr &&
        file_address - segment.vaddr < segment.memsz) {
      return true;
    }
  }
  return false;
}

}  // namespace

Result<SymbolIndex> SymbolIndex::for_self(bool use_debug_files) {
  return build(self_objects(), ::getpid(), use_debug_files);
}

Result<SymbolIndex> SymbolIndex::for_process(pid_t pid, bool use_debug_files) {
  MEMPROF_TRY(found, process_objects(pid));
  return build(std::move(found.objects), pid, use_debug_files);
}

SymbolIndex SymbolIndex::build(std::vector<LoadedObject> objects, pid_t pid, bool use_debug_files) {
  SymbolIndex index;
  index.objects_.reserve(objects.size());
  for (auto& object : objects) {
    IndexedObject indexed;
    Result<elf::ObjectSymbols> symbols = object.is_vdso ? vdso_symbols(pid, object)
                                                        : elf::ObjectSymbols::load(object.file, use_debug_files);
    if (symbols) {
      if (object.segments.empty()) object.segments = symbols->file().segments();
      indexed.symbols = std::make_shared<const elf::ObjectSymbols>(std::move(*symbols));
    } else {
      index.warnings_.push_back(symbols.message());
    }
    indexed.object = std::move(object);
    index.objects_.push_back(std::move(indexed));
  }
  return index;
}

std::vector<RuntimeSymbol> SymbolIndex::find(std::string_view name) const {
  std::vector<RuntimeSymbol> found;
  for (const auto& indexed : objects_) {
    if (!indexed.symbols) continue;
    for (const auto* entry : indexed.symbols->find(name)) {
      found.push_back(RuntimeSymbol{entry, &indexed, entry->address + indexed.object.load_bias});
    }
  }
  return found;
}

std::optional<AddressLookup> SymbolIndex::lookup(uint64_t address) const {
  for (const auto& indexed : objects_) {
    if (!in_loaded_segment(indexed.object, address)) continue;
    AddressLookup result{&indexed, nullptr, address - indexed.object.load_bias};
    if (indexed.symbols) {
      if (auto match = indexed.symbols->find_address(address - indexed.object.load_bias)) {
        result.symbol = match->symbol;
        result.offset = match->offset;
      }
    }
    return result;
  }
  return std::nullopt;
}

std::string SymbolIndex::describe(uint64_t address) const {
  auto found = lookup(address);
  if (!found) return fmt::format("{:#x}", address);
  const std::string& object = found->object->object.path;
  if (found->symbol == nullptr) return fmt::format("{:#x} ({}+{:#x})", address, object, found->offset);
  return fmt::format("{}+{:#x} ({})", found->symbol->name, found->offset, object);
}

}  // namespace memprof::proc
