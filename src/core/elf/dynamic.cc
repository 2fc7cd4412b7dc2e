// PT_DYNAMIC entries and the strings they name (DT_NEEDED, DT_SONAME).
#include <elf.h>

#include <algorithm>

#include "core/elf/elf_file.h"

namespace memprof::elf {

Result<std::vector<DynamicEntry>> ElfFile::dynamic_entries() const {
  std::vector<DynamicEntry> entries;
  auto segment = std::find_if(segments_.begin(), segments_.end(),
                              [](const Segment& s) { return s.type == PT_DYNAMIC; });
  if (segment == segments_.end()) return entries;
  auto data = slice(bytes_, segment->offset, segment->filesz);
  if (!data) return err("{}: truncated dynamic segment", name_);
  for (uint64_t offset = 0;; offset += sizeof(Elf64_Dyn)) {
    auto dyn = read_at<Elf64_Dyn>(*data, offset);
    // The table ends at DT_NULL; running out of bytes before it means the segment is cut short.
    if (!dyn) return err("{}: dynamic section has no DT_NULL terminator", name_);
    if (dyn->d_tag == DT_NULL) break;
    entries.push_back(DynamicEntry{dyn->d_tag, dyn->d_un.d_val});
  }
  return entries;
}

Result<Bytes> ElfFile::dynamic_strings(const std::vector<DynamicEntry>& entries) const {
  std::optional<uint64_t> table, size;
  for (const auto& entry : entries) {
    if (entry.tag == DT_STRTAB) table = entry.value;
    if (entry.tag == DT_STRSZ) size = entry.value;
  }
  if (!table || !size) return err("{}: dynamic section has no DT_STRTAB/DT_STRSZ", name_);
  return bytes_at_address(*table, *size);
}

Result<std::vector<std::string_view>> ElfFile::needed_libraries() const {
  MEMPROF_TRY(entries, dynamic_entries());
  std::vector<std::string_view> needed;
  std::optional<Bytes> strings;  // located at the first DT_NEEDED, then reused
  for (const auto& entry : entries) {
    if (entry.tag != DT_NEEDED) continue;
    if (!strings) {
      MEMPROF_TRY(table, dynamic_strings(entries));
      strings = table;
    }
    auto text = cstring_at(*strings, entry.value);
    if (!text) return err("{}: bad dynamic string offset {}", name_, entry.value);
    needed.push_back(*text);
  }
  return needed;
}

Result<std::optional<std::string_view>> ElfFile::soname() const {
  MEMPROF_TRY(entries, dynamic_entries());
  for (const auto& entry : entries) {
    if (entry.tag != DT_SONAME) continue;
    MEMPROF_TRY(strings, dynamic_strings(entries));
    auto text = cstring_at(strings, entry.value);
    if (!text) return err("{}: bad dynamic string offset {}", name_, entry.value);
    return std::optional<std::string_view>(*text);
  }
  return std::optional<std::string_view>{};
}

}  // namespace memprof::elf
