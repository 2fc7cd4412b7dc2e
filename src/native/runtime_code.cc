#include "native/runtime_code.h"

#include <elf.h>
#include <link.h>

#include <string_view>

#include "core/util/path_name.h"

namespace memprof::native {
namespace {

bool is_runtime_object(std::string_view file) {
  return file.starts_with("libc.so.") || file.starts_with("ld-linux") || file.starts_with("libstdc++.so.");
}

}  // namespace

RuntimeCode RuntimeCode::find() noexcept {
  RuntimeCode code;
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto& found = *static_cast<RuntimeCode*>(data);
        if (info->dlpi_name == nullptr || !is_runtime_object(file_name_of(info->dlpi_name))) return 0;
        for (ElfW(Half) i = 0; i < info->dlpi_phnum && found.count_ < kMaxRanges; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_LOAD || (segment.p_flags & PF_X) == 0) continue;
          found.ranges_[found.count_++] = {info->dlpi_addr + segment.p_vaddr, segment.p_memsz};
        }
        return 0;
      },
      &code);
  return code;
}

}  // namespace memprof::native
