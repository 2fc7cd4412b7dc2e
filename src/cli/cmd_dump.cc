// memprof dump -p PID -o FILE: a heap dump of a running process, written by a forked child.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string_view>

#include <simdjson.h>

#include "attach/agent_client.h"
#include "attach/attach_flow.h"
#include "cli/command.h"
#include "core/proc/process_access.h"
#include "core/proc/process_view.h"
#include "core/util/print_stderr.h"
#include "heap/units.h"

namespace memprof::cli {
namespace {

// Ctrl-C (or SIGTERM) while the process's child writes the dump ends memprof with a line that
// says what becomes of the dump, instead of silently: the agent sees its requester go, ends the
// child and removes the partial file.
class SayWhenInterrupted {
 public:
  explicit SayWhenInterrupted(const std::string& line) {
    const size_t length = std::min(line.size(), sizeof(message_) - 1);
    std::memcpy(message_, line.data(), length);
    length_ = length;
    struct sigaction action {};
    action.sa_handler = &SayWhenInterrupted::on_signal;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &previous_int_);
    ::sigaction(SIGTERM, &action, &previous_term_);
  }
  ~SayWhenInterrupted() {
    ::sigaction(SIGINT, &previous_int_, nullptr);
    ::sigaction(SIGTERM, &previous_term_, nullptr);
  }
  SayWhenInterrupted(const SayWhenInterrupted&) = delete;
  SayWhenInterrupted& operator=(const SayWhenInterrupted&) = delete;

 private:
  static void on_signal(int signal) {
    (void)!::write(STDERR_FILENO, message_, length_);
    ::_exit(128 + signal);
  }
  static inline char message_[1024];
  static inline size_t length_ = 0;
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

struct DumpOptions {
  pid_t pid = 0;
  std::string output;
  bool json = false;
  double stall_seconds = 30;
};

// Whether `path` (absolute), or a symbolic link it leads through, names a file by the
// descriptors of the process that opens it (/dev/stdout, /dev/fd/N, /proc/self/...).
bool names_the_openers_own_file(std::filesystem::path path) {
  static constexpr std::string_view kOwn[] = {"/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/fd/",
                                              "/proc/self/", "/proc/thread-self/"};
  for (int hop = 0; hop < 40; ++hop) {
    for (const std::string& text : {path.string(), path.lexically_normal().string()})
      for (std::string_view own : kOwn)
        if (text.starts_with(own)) return true;
    std::error_code error;
    std::filesystem::path target = std::filesystem::read_symlink(path, error);
    if (error) return false;
    path = target.is_absolute() ? target : path.parent_path() / target;
  }
  return false;
}

// The file process `pid` wrote at `path`, as memprof reaches it: through /proc/PID/root when
// the process has mounts of its own (its own /tmp), unless both see the same file there.
std::string reachable_from_here(pid_t pid, const std::string& path) {
  const std::string through_root = proc::path_from_here(pid, path);
  if (through_root == path) return path;
  struct stat here {}, there {};
  const bool same_file = ::stat(path.c_str(), &here) == 0 && ::stat(through_root.c_str(), &there) == 0 &&
                         here.st_dev == there.st_dev && here.st_ino == there.st_ino;
  return same_file ? path : through_root;
}

int run_dump(const DumpOptions& options) {
  // The process writes the file itself (a child it forks): memprof's stdout is not its to write.
  if (options.output == "-")
    return fail("dump -o -: the process writes the dump itself, so it needs a file path (give one, "
                "then `memprof analyze FILE`)");
  std::error_code error;
  // The target resolves the path in its own working directory.
  std::string path = std::filesystem::absolute(options.output, error).string();
  if (error) return fail(fmt::format("{}: {}", options.output, error.message()));
  // ... and its own descriptors: /dev/stdout there was the server's log.
  if (names_the_openers_own_file(path))
    return fail(fmt::format("dump -o {}: the process opens the path itself, where it names the process's "
                            "own descriptor, not memprof's (give a file path, then `memprof analyze FILE`)",
                            options.output));
  // A process never attached gets the agent and the gem's code, which writes the dump, but no
  // tracking: a dump needs none, and its objects then have no allocation site.
  auto loaded = attach::load_memprof(options.pid);
  if (!loaded.ok()) return fail(loaded.message());
  if (loaded->loaded)
    print_stderr("memprof: loaded memprof into process {} for the dump, without tracking: its objects have no "
                 "allocation sites (after memprof attach -p {}, a dump names the file and line of every object "
                 "allocated since)\n", options.pid, options.pid);
  auto stall_ms = static_cast<uint64_t>(options.stall_seconds * 1000);
  const bool existed = !proc::process_gone(options.pid);
  SayWhenInterrupted interrupted(fmt::format(
      "\nmemprof: interrupted: dump cancelled (process {} ends the child that was writing {} and "
      "removes the file)\n", options.pid, path));
  auto reply = attach::agent_request(options.pid, "fork-ruby",
                                     fmt::format("{}\ndump {}", stall_ms, path),
                                     std::chrono::minutes(30));
  if (!reply.ok()) {
    // The child the process forked for the dump is not ended with it: it may finish the file.
    // (Not said of a process that was gone before the request: it forked nothing.)
    if (existed && proc::process_gone(options.pid))
      return fail(fmt::format("{}; the child it had forked to write {} may still finish it", reply.message(), path));
    return fail(reply.message());
  }
  if (options.json) {
    fmt::print("{}\n", *reply);
    return 0;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  uint64_t fork_us = 0, bytes = 0, forks = 1;
  if (parser.parse(*reply).get(root) != simdjson::SUCCESS || root["fork_us"].get(fork_us) ||
      root["reply"]["bytes"].get(bytes))
    return fail("malformed reply from the agent");
  // (Absent from the reply of an agent that an earlier memprof put in the process.)
  if (root["forks"].get(forks) != simdjson::SUCCESS) forks = 1;
  fmt::print("wrote {} ({}) from a child of process {}, which paused {:.1f} ms for {}\n", path,
             heap::bytes_text(bytes), options.pid, static_cast<double>(fork_us) / 1000.0,
             forks <= 1 ? std::string("the fork")
                        : fmt::format("{} forks (the child hung {} on a lock another thread held at the fork, "
                                      "and was killed)", forks, forks == 2 ? "once" : fmt::format("{} times", forks - 1)));
  const std::string here = reachable_from_here(options.pid, path);
  if (here != path)
    fmt::print("process {} has mounts of its own (systemd's PrivateTmp, a container): from here the "
               "file is {}\n", options.pid, here);
  fmt::print("next: memprof analyze {}\n", here);
  return 0;
}

MEMPROF_COMMAND("dump", "Heap dump of a running Ruby process (ObjectSpace.dump_all, with sites once attached)",
                [](CLI::App& sub) -> std::function<int()> {
                  auto options = std::make_shared<DumpOptions>();
                  add_pid_option(sub, options->pid, "Ruby process (attached or not)")->required();
                  sub.add_option("-o,--output", options->output, "Dump file to write")
                      ->required()
                      ->check(not_empty());
                  sub.add_option("--stall-timeout", options->stall_seconds,
                                 "Seconds the child may sleep without CPU time or I/O before "
                                 "it is killed as hung")
                      ->default_val(30)
                      ->check(CLI::Range(0.1, 3600.0));
                  sub.add_flag("--json", options->json, "Print the outcome as JSON");
                  sub.footer(
                      "The process forks; the child writes ObjectSpace.dump_all's JSON lines,\n"
                      "with the file and line of every object memprof tracked, and exits. The\n"
                      "server pauses only for the fork (printed). The file is written by the\n"
                      "process's user, complete or not at all. Read it with memprof analyze.\n"
                      "A child that hangs (a lock another thread held at the fork, a C\n"
                      "extension's fork handler) is killed after --stall-timeout seconds\n"
                      "without CPU time or I/O, its scratch files removed, and the error\n"
                      "says where it slept. A process that was never attached gets memprof\n"
                      "loaded for the dump (the agent and the gem's code, as attach, without\n"
                      "tracking): its objects then have no allocation sites.");
                  return [options] { return run_dump(*options); };
                });

}  // namespace
}  // namespace memprof::cli
