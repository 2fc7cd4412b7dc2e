// Separate debug files (Debian's *-dbgsym packages, objcopy --only-keep-debug). Looked up the way
// gdb does: by build-id under <root>/.build-id/xx/rest.debug, then by .gnu_debuglink next to the
// file, in its .debug/ subdirectory and under <root>/<dir of the file>/. A candidate is accepted only
// when its build-id (or debuglink CRC) matches, so a stale debug file is never merged.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/elf/elf_file.h"
#include "core/util/result.h"

namespace memprof::elf {

struct DebugSearchPath {
  // Roots holding ".build-id/" trees and mirrored directories; /usr/lib/debug by default.
  std::vector<std::string> roots{"/usr/lib/debug"};
};

// The path of the separate debug file for `file` (opened from `path`), or nothing when none is
// installed. Errors only for a corrupt note in `file` itself.
Result<std::optional<std::string>> find_debug_file(const ElfFile& file, const std::string& path,
                                                   const DebugSearchPath& search = {});

// CRC-32 as used by .gnu_debuglink (zlib's), or nothing when libz.so.1 cannot be opened.
std::optional<uint32_t> debuglink_crc(Bytes bytes);

}  // namespace memprof::elf
