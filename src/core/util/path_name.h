// The last component of a path ("libruby.so.3.3" of "/usr/lib/libruby.so.3.3"), as a view into
// it. Paths from /proc and the loader's list, which need no normalisation.
#pragma once

#include <string_view>

namespace memprof {

inline std::string_view file_name_of(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace memprof
