// Merged, sorted symbol tables of one object and its debug file.
#include "core/elf/object_symbols.h"

#include <elf.h>

#include <algorithm>
#include <tuple>

namespace memprof::elf {

namespace {

// Symbols that name code or data at an address. Section and file symbols, TLS offsets and
// absolute values are not addresses; size-less NOTYPE labels (_end, __bss_start) only add noise.
bool is_address_symbol(const Symbol& symbol) {
  if (!symbol.defined() || symbol.name.empty() || symbol.section_index == SHN_ABS) return false;
  switch (symbol.type) {
    case STT_FUNC:
    case STT_GNU_IFUNC:
    case STT_OBJECT:
      return true;
    case STT_NOTYPE:
      return symbol.size != 0;
    default:
      return false;
  }
}

bool is_thread_local(const Symbol& symbol) {
  return symbol.defined() && !symbol.name.empty() && symbol.type == STT_TLS;
}

// Sorts by (address, name), the first-added (dynamic) entry first among equals, and keeps one
// entry per symbol: a same-named entry at the same address is a duplicate unless both carry a
// version and the versions differ (.symtab repeats .dynsym's names, versioned or not; .dynsym
// may export one address under several versions).
void sort_and_merge(std::vector<ObjectSymbols::Entry>& entries) {
  using Entry = ObjectSymbols::Entry;
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.address, a.name) < std::tie(b.address, b.name);
  });
  std::vector<Entry> merged;
  merged.reserve(entries.size());
  for (size_t first = 0; first < entries.size();) {
    size_t end = first;
    bool versioned = false;
    while (end < entries.size() && entries[end].address == entries[first].address &&
           entries[end].name == entries[first].name) {
      versioned |= !entries[end].version.empty();
      ++end;
    }
    const size_t group = merged.size();
    for (size_t i = first; i < end; ++i) {
      const Entry& entry = entries[i];
      if (versioned && entry.version.empty()) continue;  // the versioned entry names it fully
      bool seen = std::any_of(merged.begin() + static_cast<ptrdiff_t>(group), merged.end(),
                              [&](const Entry& kept) { return kept.version == entry.version; });
      if (!seen) merged.push_back(entry);
    }
    first = end;
  }
  // Versions of one name in version order, whatever order the file lists them in.
  std::sort(merged.begin(), merged.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.address, a.name, a.version) < std::tie(b.address, b.name, b.version);
  });
  entries = std::move(merged);
}

// "name@@VER" -> ("name", "VER"); "name@VER" -> ("name", "VER"); "name" -> ("name", "").
std::pair<std::string_view, std::string_view> split_version(std::string_view name) {
  size_t at = name.find('@');
  if (at == std::string_view::npos) return {name, {}};
  std::string_view version = name.substr(at + 1);
  if (!version.empty() && version.front() == '@') version.remove_prefix(1);
  return {name.substr(0, at), version};
}

}  // namespace

std::string ObjectSymbols::Entry::display_name() const {
  if (version.empty()) return std::string(name);
  return fmt::format("{}{}{}", name, default_version ? "@@" : "@", version);
}

Result<ObjectSymbols> ObjectSymbols::load(const std::string& path, bool use_debug_files,
                                          const DebugSearchPath& search) {
  MEMPROF_TRY(file, ElfFile::open(path));
  std::optional<std::string> debug_path;
  if (use_debug_files) {
    MEMPROF_TRY(found, find_debug_file(file, path, search));
    debug_path = std::move(found);
  }
  MEMPROF_TRY(symbols, from_file(std::move(file)));
  if (debug_path) {
    MEMPROF_TRY(debug, ElfFile::open(*debug_path));
    MEMPROF_TRY(debug_symbols, debug.static_symbols());
    symbols.files_.push_back(std::make_shared<const ElfFile>(std::move(debug)));
    symbols.add(debug_symbols);
    symbols.debug_path_ = std::move(debug_path);
    symbols.finish();
  }
  return std::move(symbols);
}

Result<ObjectSymbols> ObjectSymbols::from_file(ElfFile file) {
  ObjectSymbols symbols;
  MEMPROF_TRY(dynamic, file.dynamic_symbols());
  MEMPROF_TRY(statics, file.static_symbols());
  symbols.files_.push_back(std::make_shared<const ElfFile>(std::move(file)));
  // Dynamic first: on duplicates the .dynsym entry (which carries the version) is kept.
  symbols.add(dynamic);
  symbols.add(statics);
  symbols.finish();
  return symbols;
}

void ObjectSymbols::add(const std::vector<Symbol>& symbols) {
  for (const auto& symbol : symbols) {
    const bool thread_local_variable = is_thread_local(symbol);
    if (!thread_local_variable && !is_address_symbol(symbol)) continue;
    Entry entry{symbol.name, symbol.version, symbol.default_version, symbol.value,
                symbol.size, symbol.type, symbol.bind, symbol.table};
    // binutils >= 2.35 writes versioned names into .symtab literally ("memcpy@@GLIBC_2.14"); split
    // them so they merge with the .dynsym entry and print the same way.
    if (entry.version.empty()) {
      auto [base, version] = split_version(entry.name);
      if (!version.empty()) {
        entry.default_version = entry.name.substr(base.size()).starts_with("@@");
        entry.name = base;
        entry.version = version;
      }
    }
    (thread_local_variable ? thread_locals_ : entries_).push_back(entry);
  }
}

void ObjectSymbols::finish() {
  sort_and_merge(entries_);
  sort_and_merge(thread_locals_);
  by_name_.resize(entries_.size());
  max_size_ = 0;
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    by_name_[i] = i;
    max_size_ = std::max(max_size_, entries_[i].size);
  }
  std::stable_sort(by_name_.begin(), by_name_.end(),
                   [&](uint32_t a, uint32_t b) { return entries_[a].name < entries_[b].name; });
}

std::vector<const ObjectSymbols::Entry*> ObjectSymbols::find(std::string_view name) const {
  auto [base, version] = split_version(name);
  // Heterogeneous comparison of by_name_ indices with the looked-up name.
  struct NameLess {
    const std::vector<Entry>& entries;
    bool operator()(uint32_t a, std::string_view b) const { return entries[a].name < b; }
    bool operator()(std::string_view a, uint32_t b) const { return a < entries[b].name; }
  };
  auto [first, last] = std::equal_range(by_name_.begin(), by_name_.end(), base, NameLess{entries_});
  std::vector<const Entry*> found;
  for (auto it = first; it != last; ++it) {
    const Entry& entry = entries_[*it];
    if (!version.empty() && entry.version != version) continue;
    found.push_back(&entry);
  }
  return found;
}

std::optional<ObjectSymbols::AddressMatch> ObjectSymbols::find_address(uint64_t address) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
                             [](uint64_t a, const Entry& e) { return a < e.address; });
  // Walk back over every symbol that starts early enough to still cover `address`; the nearest
  // start wins (the innermost of nested symbols).
  while (it != entries_.begin()) {
    --it;
    if (address - it->address >= max_size_) break;
    if (address - it->address < it->size) return AddressMatch{&*it, address - it->address};
  }
  return std::nullopt;
}

}  // namespace memprof::elf
