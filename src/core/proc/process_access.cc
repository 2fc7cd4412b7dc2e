// Access checks and their explanations (Yama, capabilities, other users' processes).
#include "core/proc/process_access.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <string_view>

#include "core/util/proc_file.h"

namespace memprof::proc {

namespace {

constexpr int kCapSysPtrace = 19;  // linux/capability.h

}  // namespace

// The first number of the "Uid:" line.
std::optional<uid_t> process_uid(pid_t pid) {
  auto status = read_proc_file(fmt::format("/proc/{}/status", pid));
  if (!status) return std::nullopt;
  std::string uids = status_field(*status, "Uid");
  uid_t uid = 0;
  auto [end, ec] = std::from_chars(uids.data(), uids.data() + uids.size(), uid);
  if (ec != std::errc() || end == uids.data()) return std::nullopt;
  return uid;
}

namespace {

// The fields of /proc/PID/stat this file needs; state '?' when it cannot be read.
struct StatFields {
  char state = '?';
  uint64_t flags = 0;  // PF_* of linux/sched.h
};

StatFields read_stat(pid_t pid) {
  auto stat = read_proc_file(fmt::format("/proc/{}/stat", pid));
  if (!stat.ok()) return {};
  // "PID (COMM) STATE PPID PGRP SESSION TTY TPGID FLAGS ...": COMM may hold spaces and
  // parentheses, the last ')' ends it.
  const size_t close = stat->rfind(')');
  if (close == std::string::npos || close + 2 >= stat->size()) return {};
  StatFields fields{(*stat)[close + 2]};
  std::string_view rest = std::string_view(*stat).substr(close + 2);
  for (int field = 0; field < 6; ++field) {  // to FLAGS, the 7th from STATE
    rest.remove_prefix(std::min(rest.find(' '), rest.size()));
    rest.remove_prefix(std::min(rest.find_first_not_of(' '), rest.size()));
  }
  std::from_chars(rest.data(), rest.data() + rest.size(), fields.flags);
  return fields;
}

constexpr uint64_t kPfKthread = 0x00200000;  // linux/sched.h

}  // namespace

char process_state(pid_t pid) { return read_stat(pid).state; }

bool kernel_thread(pid_t pid) { return (read_stat(pid).flags & kPfKthread) != 0; }

Status check_process_exists(pid_t pid) {
  struct stat st {};
  if (pid <= 0 || ::stat(fmt::format("/proc/{}", pid).c_str(), &st) != 0) {
    return err("no such process: {}", pid);
  }
  const StatFields fields = read_stat(pid);  // one reading for both
  if (fields.state == 'Z' || fields.state == 'X')
    return err("process {} has ended (a zombie its parent has not reaped yet)", pid);
  if ((fields.flags & kPfKthread) != 0) return err("process {} is a kernel thread: it runs no program", pid);
  if (auto status = read_proc_file(fmt::format("/proc/{}/status", pid))) return check_not_a_thread(pid, *status);
  return ok_status();
}

Status check_not_a_thread(pid_t pid, std::string_view status) {
  const std::string field = status_field(status, "Tgid");
  pid_t process = 0;
  std::from_chars(field.data(), field.data() + field.size(), process);
  if (process != 0 && process != pid)
    return err("{} is a thread of process {}; give the process id {} instead", pid, process, process);
  return ok_status();
}

bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  const char state = process_state(pid);
  return state == 'Z' || state == 'X' || state == '?';
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

namespace {

// Why Yama refuses at `scope` and what to do; nothing for scope 0 (Yama allows it).
std::optional<std::string> yama_refusal(int scope, bool cap_sys_ptrace, bool ancestor) {
  switch (scope) {
    case 1:
      if (cap_sys_ptrace || ancestor) return std::nullopt;
      return "permission denied: kernel.yama.ptrace_scope is 1, so only an ancestor of a process "
             "(or one it named with prctl(PR_SET_PTRACER)) may attach to it or read its memory "
             "without CAP_SYS_PTRACE; run memprof as root (or with CAP_SYS_PTRACE), or set "
             "`sysctl kernel.yama.ptrace_scope=0`";
    case 2:
      if (cap_sys_ptrace) return std::nullopt;
      return "permission denied: kernel.yama.ptrace_scope is 2, so only processes with "
             "CAP_SYS_PTRACE may attach; run memprof as root";
    case 3:
      return "permission denied: kernel.yama.ptrace_scope is 3, which forbids ptrace for everyone "
             "until reboot";
    default:
      return std::nullopt;
  }
}

std::string other_user_refusal(pid_t pid, uid_t target_uid, uid_t our_uid) {
  return fmt::format(
      "permission denied: process {} belongs to uid {} and memprof runs as uid {} without "
      "CAP_SYS_PTRACE; run memprof as that user or as root",
      pid, target_uid, our_uid);
}

// Whether this process is an ancestor of `pid` (following PPid up to init).
bool is_ancestor_of(pid_t pid) {
  const pid_t self = ::getpid();
  for (int depth = 0; depth < 4096 && pid > 1; ++depth) {
    auto status = read_proc_file(fmt::format("/proc/{}/status", pid));
    if (!status) return false;
    std::string parent = status_field(*status, "PPid");
    pid_t ppid = 0;
    std::from_chars(parent.data(), parent.data() + parent.size(), ppid);
    if (ppid == self) return true;
    pid = ppid;
  }
  return false;
}

}  // namespace

AccessFacts access_facts(pid_t pid) {
  AccessFacts facts;
  facts.pid = pid;
  facts.target_uid = process_uid(pid);
  facts.our_uid = ::geteuid();
  facts.cap_sys_ptrace = has_cap_sys_ptrace();
  facts.yama_scope = yama_ptrace_scope();
  facts.we_are_ancestor = facts.yama_scope == 1 && is_ancestor_of(pid);
  return facts;
}

Status predict_access(const AccessFacts& facts) {
  const int scope = facts.yama_scope.value_or(0);
  if (scope == 3) return Error{*yama_refusal(scope, facts.cap_sys_ptrace, facts.we_are_ancestor)};
  if (!facts.cap_sys_ptrace && facts.target_uid && *facts.target_uid != facts.our_uid) {
    return Error{other_user_refusal(facts.pid, *facts.target_uid, facts.our_uid)};
  }
  if (auto refusal = yama_refusal(scope, facts.cap_sys_ptrace, facts.we_are_ancestor)) {
    return Error{*refusal};
  }
  return ok_status();
}

std::string explain_access_denied(pid_t pid) {
  const bool cap = has_cap_sys_ptrace();
  const int scope = yama_ptrace_scope().value_or(0);
  if (cap) {
    // Even CAP_SYS_PTRACE is refused for Yama scope 3 and by LSMs (SELinux, AppArmor).
    if (auto refusal = yama_refusal(scope, cap, false)) return *refusal;
    return "permission denied although memprof has CAP_SYS_PTRACE (a security module such as "
           "AppArmor or SELinux may forbid it)";
  }
  auto uid = process_uid(pid);
  if (uid && *uid != ::geteuid()) return other_user_refusal(pid, *uid, ::geteuid());
  // Scope 1 is explained even for an ancestor: a refusal then has no other known cause.
  if (auto refusal = yama_refusal(scope, cap, false)) return *refusal;
  return "permission denied: the process is not dumpable (e.g. setuid or it called "
         "prctl(PR_SET_DUMPABLE, 0)) and memprof lacks CAP_SYS_PTRACE; run memprof as root";
}

}  // namespace memprof::proc
