#include "core/track/site_table.h"

#include <cstring>
#include <new>

namespace memprof::track {

SiteTable::SiteTable() {
  files_.push_back(std::make_unique<File>(File{std::string(kUnknownFile)}));
  file_ids_.emplace(files_[0]->name, 0);
  sites_.push_back(Site{0, 0});
  site_ids_.emplace(0, kUnknownSite);
  intern_site(intern_file(std::string(kInternalFile).c_str()), 0);
}

uint32_t SiteTable::intern(const char* file, int line) noexcept {
  if (file == nullptr) return kUnknownSite;
  auto bits = reinterpret_cast<uintptr_t>(file) ^ (static_cast<uintptr_t>(line) * 0x9E3779B1u);
  SiteCacheSlot& cached = site_cache_[(bits ^ (bits >> 8)) % site_cache_.size()];
  if (cached.pointer == file && cached.line == line && same_name(file, sites_[cached.site].file))
    return cached.site;
  try {
    PointerCacheSlot& slot =
        pointer_cache_[(reinterpret_cast<uintptr_t>(file) >> 4) % pointer_cache_.size()];
    uint32_t file_id;
    if (slot.pointer == file && same_name(file, slot.file)) {
      file_id = slot.file;
    } else {
      file_id = intern_file(file);
      slot = PointerCacheSlot{file, file_id};
    }
    uint32_t site = intern_site(file_id, line);
    cached = SiteCacheSlot{file, line, site};
    return site;
  } catch (const std::bad_alloc&) {
    return kUnknownSite;
  }
}

uint32_t SiteTable::intern_file(const char* file) {
  std::string_view name(file);
  if (auto it = file_ids_.find(name); it != file_ids_.end()) return it->second;
  auto id = static_cast<uint32_t>(files_.size());
  files_.push_back(std::make_unique<File>(File{std::string(name)}));
  file_ids_.emplace(files_.back()->name, id);
  return id;
}

uint32_t SiteTable::intern_site(uint32_t file, int line) {
  uint64_t key = (static_cast<uint64_t>(file) << 32) | static_cast<uint32_t>(line);
  if (auto it = site_ids_.find(key); it != site_ids_.end()) return it->second;
  auto id = static_cast<uint32_t>(sites_.size());
  sites_.push_back(Site{file, line});
  site_ids_.emplace(key, id);
  return id;
}

size_t SiteTable::memory_bytes() const {
  size_t bytes = sites_.capacity() * sizeof(Site) + site_ids_.size() * 32 + sizeof(*this);
  for (const auto& f : files_) bytes += sizeof(File) + f->name.capacity() + 32;
  return bytes;
}

}  // namespace memprof::track
