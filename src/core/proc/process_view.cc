#include "core/proc/process_view.h"

#include <unistd.h>

#include <charconv>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "core/util/proc_file.h"

namespace memprof::proc {

bool same_mount_namespace(pid_t pid) {
  char ours[64] = {}, theirs[64] = {};
  if (::readlink("/proc/self/ns/mnt", ours, sizeof(ours) - 1) < 0) return true;
  if (::readlink(fmt::format("/proc/{}/ns/mnt", pid).c_str(), theirs, sizeof(theirs) - 1) < 0) return true;
  return std::strcmp(ours, theirs) == 0;
}

std::string root_of(pid_t pid) {
  return same_mount_namespace(pid) ? std::string() : fmt::format("/proc/{}/root", pid);
}

std::string path_from_here(pid_t pid, const std::string& path) { return root_of(pid) + path; }

namespace {

// The last number of the NSpid line of the status file at `path`, or `outside` without one.
pid_t innermost_id(const std::string& path, pid_t outside) {
  auto status = read_proc_file(path);
  if (!status) return outside;
  const std::string field = status_field(*status, "NSpid");  // "4242" or "4242\t7"
  std::string_view numbers = field;
  while (!numbers.empty() && (numbers.back() == ' ' || numbers.back() == '\t')) numbers.remove_suffix(1);
  const size_t last = numbers.find_last_of(" \t");
  if (last != std::string_view::npos) numbers.remove_prefix(last + 1);
  pid_t inside = 0;
  auto [end, ec] = std::from_chars(numbers.data(), numbers.data() + numbers.size(), inside);
  return ec == std::errc() && end == numbers.data() + numbers.size() && inside > 0 ? inside : outside;
}

}  // namespace

pid_t pid_inside(pid_t pid) { return innermost_id(fmt::format("/proc/{}/status", pid), pid); }

pid_t tid_inside(pid_t pid, pid_t tid) {
  return innermost_id(fmt::format("/proc/{}/task/{}/status", pid, tid), tid);
}

}  // namespace memprof::proc
