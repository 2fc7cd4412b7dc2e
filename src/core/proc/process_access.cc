// Access checks and their explanations (Yama, capabilities, other users' processes).
#include "core/proc/process_access.h"

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <string_view>

#include "core/util/proc_file.h"

namespace memprof::proc {

namespace {

constexpr int kCapSysPtrace = 19;  // linux/capability.h

// The value of a "Key:\tvalue" line of /proc/PID/status, or empty.
std::string status_field(const std::string& status, std::string_view key) {
  size_t at = 0;
  while (at < status.size()) {
    size_t end = std::min(status.find('\n', at), status.size());
    std::string_view line(status.data() + at, end - at);
    if (line.starts_with(key) && line.size() > key.size() && line[key.size()] == ':') {
      line.remove_prefix(key.size() + 1);
      size_t start = line.find_first_not_of(" \t");
      return start == std::string_view::npos ? std::string() : std::string(line.substr(start));
    }
    at = end + 1;
  }
  return {};
}

// The real uid of a process (first number of the "Uid:" line).
std::optional<uid_t> process_uid(pid_t pid) {
  auto status = read_proc_file(fmt::format("/proc/{}/status", pid));
  if (!status) return std::nullopt;
  std::string uids = status_field(*status, "Uid");
  uid_t uid = 0;
  auto [end, ec] = std::from_chars(uids.data(), uids.data() + uids.size(), uid);
  if (ec != std::errc() || end == uids.data()) return std::nullopt;
  return uid;
}

}  // namespace

Status check_process_exists(pid_t pid) {
  struct stat st {};
  if (pid <= 0 || ::stat(fmt::format("/proc/{}", pid).c_str(), &st) != 0) {
    return err("no such process: {}", pid);
  }
  return ok_status();
}

std::optional<int> yama_ptrace_scope() {
  auto text = read_proc_file("/proc/sys/kernel/yama/ptrace_scope");
  if (!text) return std::nullopt;
  int scope = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), scope);
  if (ec != std::errc() || end == text->data()) return std::nullopt;
  return scope;
}

bool has_cap_sys_ptrace() {
  auto status = read_proc_file("/proc/self/status");
  if (!status) return false;
  std::string effective = status_field(*status, "CapEff");
  uint64_t mask = 0;
  auto [end, ec] = std::from_chars(effective.data(), effective.data() + effective.size(), mask, 16);
  if (ec != std::errc() || end == effective.data()) return false;
  return (mask >> kCapSysPtrace) & 1;
}

std::string explain_access_denied(pid_t pid) {
  if (has_cap_sys_ptrace()) {
    // Even CAP_SYS_PTRACE is refused for Yama scope 3 and by LSMs (SELinux, AppArmor).
    if (yama_ptrace_scope() == 3) {
      return "permission denied: kernel.yama.ptrace_scope is 3, which forbids ptrace for everyone "
             "until reboot";
    }
    return "permission denied although memprof has CAP_SYS_PTRACE (a security module such as "
           "AppArmor or SELinux may forbid it)";
  }
  auto uid = process_uid(pid);
  if (uid && *uid != ::geteuid()) {
    return fmt::format(
        "permission denied: process {} belongs to uid {} and memprof runs as uid {} without "
        "CAP_SYS_PTRACE; run memprof as that user or as root",
        pid, *uid, ::geteuid());
  }
  switch (yama_ptrace_scope().value_or(0)) {
    case 1:
      return "permission denied: kernel.yama.ptrace_scope is 1, so only a parent process may "
             "read another process's memory without CAP_SYS_PTRACE; run memprof as root (or "
             "with CAP_SYS_PTRACE), or set `sysctl kernel.yama.ptrace_scope=0`";
    case 2:
      return "permission denied: kernel.yama.ptrace_scope is 2, so only processes with "
             "CAP_SYS_PTRACE may attach; run memprof as root";
    case 3:
      return "permission denied: kernel.yama.ptrace_scope is 3, which forbids ptrace for everyone "
             "until reboot";
    default:
      return "permission denied: the process is not dumpable (e.g. setuid or it called "
             "prctl(PR_SET_DUMPABLE, 0)) and memprof lacks CAP_SYS_PTRACE; run memprof as root";
  }
}

}  // namespace memprof::proc
