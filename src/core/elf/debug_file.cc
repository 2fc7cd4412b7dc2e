// Separate debug file lookup by build-id and .gnu_debuglink.
#include "core/elf/debug_file.h"

#include <filesystem>

#include "core/util/zlib_library.h"

namespace memprof::elf {

namespace {

bool is_regular_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

// A candidate qualifies when it parses and carries the same build-id as the original.
bool build_id_matches(const std::string& candidate, const std::string& build_id) {
  auto file = ElfFile::open(candidate);
  if (!file) return false;
  auto id = file->build_id();
  return id && *id == build_id;
}

bool crc_matches(const std::string& candidate, uint32_t crc) {
  auto mapped = MappedFile::open(candidate);
  // Without zlib no CRC is known and no candidate matches (a build-id needs none).
  return mapped && debuglink_crc(mapped->bytes()) == crc;
}

}  // namespace

std::optional<uint32_t> debuglink_crc(Bytes bytes) {
  const Result<ZlibLibrary>& zlib = ZlibLibrary::get();
  if (!zlib) return std::nullopt;
  uLong crc = zlib->crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths: feed large files in chunks.
  constexpr size_t kChunk = 1u << 30;
  for (size_t offset = 0; offset < bytes.size(); offset += kChunk) {
    size_t length = std::min(kChunk, bytes.size() - offset);
    crc = zlib->crc32(crc, bytes.data() + offset, static_cast<uInt>(length));
  }
  return static_cast<uint32_t>(crc);
}

Result<std::optional<std::string>> find_debug_file(const ElfFile& file, const std::string& path,
                                                   const DebugSearchPath& search) {
  MEMPROF_TRY(build_id, file.build_id());
  if (build_id.size() > 2) {
    for (const auto& root : search.roots) {
      std::string candidate =
          fmt::format("{}/.build-id/{}/{}.debug", root, build_id.substr(0, 2), build_id.substr(2));
      if (is_regular_file(candidate) && build_id_matches(candidate, build_id)) return {candidate};
    }
  }

  MEMPROF_TRY(link, file.debuglink());
  if (!link) return std::optional<std::string>{};
  std::filesystem::path original(path);
  std::error_code ec;
  auto canonical = std::filesystem::weakly_canonical(original, ec);
  std::filesystem::path directory = (ec ? original : canonical).parent_path();
  std::vector<std::filesystem::path> candidates{directory / link->file,
                                                directory / ".debug" / link->file};
  for (const auto& root : search.roots) {
    candidates.push_back(std::filesystem::path(root) / directory.relative_path() / link->file);
  }
  for (const auto& candidate : candidates) {
    std::string text = candidate.string();
    // The debug link may name the file itself (a debug file sitting next to an unstripped one).
    if (std::filesystem::equivalent(candidate, original, ec)) continue;
    if (is_regular_file(text) && crc_matches(text, link->crc)) return {text};
  }
  return std::optional<std::string>{};
}

}  // namespace memprof::elf
