// Allocation sites: (file, line) pairs interned to dense 32-bit ids.
//
// intern() runs on every tracked allocation, so the common cases are cache hits: the same site
// as the previous allocation, or a file seen recently. File names arrive as C strings whose
// storage belongs to the runtime (Ruby: the iseq's path string) and may be freed and reused for
// another name, so a cached pointer is only trusted after comparing the bytes against our copy.
// Site 0 is "(unknown):0", used when there is no source frame or memory runs out; site 1 is
// "(memprof):0", for objects the profiler itself allocates (kept, so that their slots stay
// accounted for, but never reported).
#pragma once

#include <array>
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memprof::track {

class SiteTable {
 public:
  static constexpr uint32_t kUnknownSite = 0;
  static constexpr uint32_t kInternalSite = 1;
  static constexpr std::string_view kUnknownFile = "(unknown)";
  static constexpr std::string_view kInternalFile = "(memprof)";

  SiteTable();
  SiteTable(const SiteTable&) = delete;
  SiteTable& operator=(const SiteTable&) = delete;

  // `file` may be null (no source frame). Never throws.
  uint32_t intern(const char* file, int line) noexcept;

  std::string_view file(uint32_t site) const { return files_[sites_[site].file]->name; }
  int line(uint32_t site) const { return sites_[site].line; }
  size_t size() const { return sites_.size(); }
  size_t file_count() const { return files_.size(); }
  size_t memory_bytes() const;

 private:
  struct File {
    std::string name;
  };
  struct Site {
    uint32_t file;
    int line;
  };
  struct PointerCacheSlot {
    const char* pointer = nullptr;
    uint32_t file = 0;
  };
  struct SiteCacheSlot {
    const char* pointer = nullptr;
    int line = 0;
    uint32_t site = kUnknownSite;
  };

  uint32_t intern_file(const char* file);
  uint32_t intern_site(uint32_t file, int line);
  bool same_name(const char* pointer, uint32_t file) const {
    const std::string& name = files_[file]->name;
    // Comparing the terminating NUL too rules out a longer name with the same prefix.
    return std::memcmp(pointer, name.c_str(), name.size() + 1) == 0;
  }

  std::vector<std::unique_ptr<File>> files_;           // stable name storage
  std::unordered_map<std::string_view, uint32_t> file_ids_;  // views into files_
  std::vector<Site> sites_;
  std::unordered_map<uint64_t, uint32_t> site_ids_;    // (file << 32 | line) -> site
  std::array<PointerCacheSlot, 64> pointer_cache_{};   // direct-mapped by pointer bits
  // Recent (pointer, line) -> site, direct-mapped: a loop body allocates at a few lines, over
  // and over. Hits are verified by content like every cached pointer.
  std::array<SiteCacheSlot, 256> site_cache_{};
};

}  // namespace memprof::track
