// check_can_inject: what can be known about a process before attaching to it, each problem told
// in one sentence saying what to do.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>

#include "core/proc/loaded_objects.h"
#include "core/proc/process_access.h"
#include "core/proc/threads.h"
#include "core/util/proc_file.h"
#include "inject/inject.h"
#include "inject/preflight.h"
#include "inject/target_libc.h"

namespace memprof::inject {

namespace {

pid_t number_field(std::string_view status, std::string_view key) {
  std::string text = status_field(status, key);
  pid_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

std::string process_name(pid_t pid) {
  auto comm = read_proc_file(fmt::format("/proc/{}/comm", pid));
  if (!comm) return "an unknown process";
  std::string name = *comm;
  while (!name.empty() && name.back() == '\n') name.pop_back();
  return name;
}

// Another memprof traces only while it attaches (a second or so) or while `memprof trace` runs
// the program: there is nothing to detach, only to wait for.
Error traced_by(pid_t pid, pid_t tracer) {
  const std::string name = process_name(tracer);
  if (name == "memprof") {
    return err("process {} is being traced by another memprof (pid {}), attaching to it or "
               "tracing it; run this again when that command is done", pid, tracer);
  }
  return err("process {} is already traced by {} (pid {}); detach it or stop that tracer first",
             pid, name, tracer);
}

// The first tracer of any thread of `pid` (a debugger may trace one thread only), or 0.
pid_t tracer_of(pid_t pid, std::string_view leader_status) {
  if (pid_t tracer = number_field(leader_status, "TracerPid")) return tracer;
  for (pid_t tid : proc::process_threads(pid)) {
    auto status = read_proc_file(fmt::format("/proc/{}/task/{}/status", pid, tid));
    if (!status) continue;
    if (pid_t tracer = number_field(*status, "TracerPid")) return tracer;
  }
  return 0;
}

Error stopped(pid_t pid) {
  return err("process {} is stopped (SIGSTOP); resume it with kill -CONT {}", pid, pid);
}

Status check_state(pid_t pid, std::string_view status) {
  std::string state = status_field(status, "State");
  switch (state.empty() ? '?' : state.front()) {
    case 'Z':
      return err("process {} is a zombie: it has exited and its parent has not reaped it yet, so "
                 "there is nothing to attach to", pid);
    case 'X':
      return err("process {} has exited", pid);
    case 'T':
      // Attaching would work but the stopped thread could not run dlopen: memprof would wait.
      return stopped(pid);
    default:
      return ok_status();
  }
}

}  // namespace

Status check_process_can_be_traced(pid_t pid) {
  int error_number = 0;
  auto status = pid > 0 ? read_proc_file(fmt::format("/proc/{}/status", pid), &error_number)
                        : Result<std::string>(err("bad pid"));
  if (!status) {
    if (pid > 0 && error_number != ENOENT && error_number != ESRCH) {
      return err("cannot inspect process {}: {}", pid, status.message());
    }
    return err("no such process: {}; check the process id (ps -p {})", pid, pid);
  }
  MEMPROF_TRY_STATUS(proc::check_not_a_thread(pid, *status));
  MEMPROF_TRY_STATUS(check_state(pid, *status));
  if (pid_t tracer = tracer_of(pid, *status)) {
    return traced_by(pid, tracer);
  }
  if (auto access = proc::predict_access(proc::access_facts(pid)); !access) {
    return err("cannot attach to process {}: {}", pid, access.message());
  }
  if (status_field(*status, "Seccomp") == "1") {
    return err("process {} runs in seccomp strict mode (Seccomp: 1 in /proc/{}/status): any "
               "system call but read, write and exit kills it, and loading a library needs "
               "openat and mmap; memprof cannot attach to it", pid, pid);
  }
  return ok_status();
}

std::optional<Error> traced_by_another(pid_t pid) {
  auto status = read_proc_file(fmt::format("/proc/{}/status", pid));
  if (!status) return std::nullopt;
  const pid_t tracer = tracer_of(pid, *status);
  if (tracer == 0 || tracer == ::getpid()) return std::nullopt;
  return traced_by(pid, tracer);
}

Status check_process_can_answer(pid_t pid) {
  auto status = read_proc_file(fmt::format("/proc/{}/status", pid));
  if (!status) return ok_status();  // gone: the connection says so
  const std::string state = status_field(*status, "State");
  if (state.starts_with('T')) return stopped(pid);
  if (state.starts_with('t')) {
    const pid_t tracer = number_field(*status, "TracerPid");
    if (process_name(tracer) == "memprof") return traced_by(pid, tracer);
    return err("process {} is stopped by {} (pid {}), which traces it; it answers once that tracer "
               "lets it run", pid, process_name(tracer), tracer);
  }
  return ok_status();
}

std::string seccomp_hint(pid_t pid) {
  auto status = read_proc_file(fmt::format("/proc/{}/status", pid));
  if (!status || status_field(*status, "Seccomp") != "2") return {};
  return fmt::format(" (process {} runs under a seccomp filter, Seccomp: 2 in /proc/{}/status, "
                     "which may refuse the calls dlopen makes: openat, mmap, mprotect; a "
                     "container's seccomp profile must allow them)", pid, pid);
}

namespace {

// The soft limit of /proc/PID/limits' "Max address space" line, or nullopt for unlimited (or
// unreadable).
std::optional<uint64_t> address_space_limit(pid_t pid) {
  auto limits = read_proc_file(fmt::format("/proc/{}/limits", pid));
  if (!limits) return std::nullopt;
  constexpr std::string_view kLine = "Max address space";
  const size_t at = limits->find(kLine);
  if (at == std::string::npos) return std::nullopt;
  std::string_view rest = std::string_view(*limits).substr(at + kLine.size());
  rest.remove_prefix(std::min(rest.find_first_not_of(' '), rest.size()));
  uint64_t limit = 0;
  auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), limit);
  if (error != std::errc() || end == rest.data()) return std::nullopt;  // "unlimited"
  return limit;
}

std::string mebibytes(uint64_t bytes) { return fmt::format("{:.1f} MB", static_cast<double>(bytes) / (1 << 20)); }

}  // namespace

Status check_address_space_room(pid_t pid) {
  const std::optional<uint64_t> limit = address_space_limit(pid);
  if (!limit) return ok_status();
  auto status = read_proc_file(fmt::format("/proc/{}/status", pid));
  if (!status) return ok_status();
  const std::string size = status_field(*status, "VmSize");  // "75216 kB"
  uint64_t mapped_kb = 0;
  if (std::from_chars(size.data(), size.data() + size.size(), mapped_kb).ec != std::errc()) return ok_status();
  const uint64_t mapped = mapped_kb << 10;
  if (mapped + kAgentAddressSpace <= *limit) return ok_status();
  return err("process {} may map at most {} (its ulimit -v, RLIMIT_AS) and has {} mapped: memprof's "
             "agent needs about {} more, and taking what is left could make the process's own "
             "allocations fail; raise its limit (prlimit --pid {} --as=BYTES, up to its hard "
             "limit) or restart it without one",
             pid, mebibytes(*limit), mebibytes(mapped), mebibytes(kAgentAddressSpace), pid);
}

Status check_can_inject(pid_t pid) {
  MEMPROF_TRY_STATUS(check_process_can_be_traced(pid));
  MEMPROF_TRY_STATUS(check_address_space_room(pid));
  MEMPROF_TRY(found, proc::process_objects(pid));
  bool has_libc = std::any_of(found.objects.begin(), found.objects.end(),
                              [](const proc::LoadedObject& object) {
                                return !object.is_main && is_libc_path(object.path);
                              });
  if (!has_libc) return statically_linked_error(pid);
  return ok_status();
}

}  // namespace memprof::inject
