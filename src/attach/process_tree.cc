#include "attach/process_tree.h"

#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "core/util/proc_file.h"

namespace memprof::attach {

std::vector<pid_t> process_tree(pid_t pid) {
  std::vector<pid_t> tree{pid};
  for (size_t next = 0; next < tree.size(); ++next) {
    std::error_code error;
    for (const auto& task :
         std::filesystem::directory_iterator(fmt::format("/proc/{}/task", tree[next]), error)) {
      auto children = read_proc_file((task.path() / "children").string());
      if (!children.ok()) continue;
      std::istringstream words(*children);
      pid_t child = 0;
      while (words >> child) tree.push_back(child);
    }
  }
  return tree;
}

}  // namespace memprof::attach
