// memprof native -p PID [--duration 20s]: which library, which call site leaks native memory.
// The agent hooks the malloc family at its entry inside the process (src/native) and keeps
// every block allocated since the start with its call site; at the end the CLI names the sites
// (library, symbol+offset) and prints what is still live, what was allocated, and the peak.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "attach/agent_client.h"
#include "attach/duration.h"
#include "attach/interruption.h"
#include "attach/native_gc.h"
#include "attach/native_profile.h"
#include "attach/native_report.h"
#include "attach/recorded_process.h"
#include "cli/command.h"
#include "core/proc/symbol_index.h"
#include "core/util/print_stderr.h"
#include "native/native_wire.h"
#include "profile/collapsed_stacks.h"
#include "profile/flame_graph_html.h"
#include "profile/pprof_writer.h"
#include "report/output_file.h"

namespace memprof::cli {
namespace {

struct NativeOptions {
  pid_t pid = 0;
  std::string duration;
  size_t top = 20;
  uint32_t stack_depth = 1;
  bool no_ruby_lines = false;
  bool no_gc = false;
  bool track_mmap = false;
  bool json = false;
  bool full_names = false;
  std::string output;  // the report; empty: stderr for a launched command, stdout with -p
  std::string pprof_path;
  std::string collapsed_path;
  std::string flame_graph_path;
  std::string value = "inuse_space";
  std::vector<std::string> command;
};

// Keeps the agent's watchdog from ending the session, and notices a process that exits.
constexpr auto kReadInterval = std::chrono::seconds(1);

// The process's objects and symbols, to name call sites. Read again at the end (libraries
// loaded meanwhile), while the process is still there: one that exits waits for the stop.
class SiteNamer {
 public:
  explicit SiteNamer(pid_t pid) : pid_(pid) { refresh({}); }
  // Also reads the source lines of the snapshot's addresses (debug information, while the
  // process is there).
  void refresh(const native::NativeSnapshot& snapshot) {
    auto index = proc::SymbolIndex::for_process(pid_);
    if (index.ok()) index_ = std::move(*index);
    std::vector<uint64_t> addresses;
    for (const native::SiteRow& site : snapshot.sites) addresses.insert(addresses.end(), site.frames.begin(), site.frames.end());
    sources_ = attach::source_lines_of(pid_, addresses);
  }
  const proc::SymbolIndex& index() const { return index_; }
  const std::map<uint64_t, attach::SourceLine>& sources() const { return sources_; }

 private:
  pid_t pid_;
  proc::SymbolIndex index_ = proc::SymbolIndex::build({}, 0, false);
  std::map<uint64_t, attach::SourceLine> sources_;
};

// --pprof, --collapsed, --flame-graph: the same sites as weighted stacks (attach/native_profile.h).
Status write_profiles(const NativeOptions& options, const native::NativeSnapshot& snapshot,
                      const SiteNamer& namer, pid_t pid, double seconds) {
  if (options.pprof_path.empty() && options.collapsed_path.empty() && options.flame_graph_path.empty())
    return ok_status();
  attach::FrameNamer names(namer.index(), &namer.sources());
  profile::StackProfile stacks = attach::native_stack_profile(
      snapshot, names,
      options.command.empty() ? fmt::format("memprof native -p {}", pid)
                              : fmt::format("memprof native -- {}", fmt::join(options.command, " ")),
      seconds);
  profile::SampleValue value = *profile::parse_sample_value(options.value);
  if (!options.pprof_path.empty()) MEMPROF_TRY_STATUS(profile::write_pprof(options.pprof_path, stacks));
  if (!options.collapsed_path.empty())
    MEMPROF_TRY_STATUS(profile::write_collapsed_stacks(options.collapsed_path, stacks, value));
  if (!options.flame_graph_path.empty())
    MEMPROF_TRY_STATUS(profile::write_flame_graph_html(options.flame_graph_path, stacks, value));
  return ok_status();
}

// Whether a Ruby line was recorded: the process ran Ruby (unknown with --no-ruby-lines).
bool ran_ruby(const native::NativeSnapshot& snapshot) {
  return std::ranges::any_of(snapshot.sites, [](const native::SiteRow& row) { return row.ruby_file != 0; });
}

int run_native(const NativeOptions& options) {
  auto duration = attach::parse_optional_duration(options.duration);
  if (!duration.ok()) return fail(duration.message());
  // Said before the session, not after it (a typo lost a whole session's report).
  for (const std::string* path : {&options.output, &options.pprof_path, &options.collapsed_path, &options.flame_graph_path})
    if (!path->empty())
      if (Status writable = report::check_can_write(*path); !writable.ok()) return fail(writable.message());
  auto opened = attach::RecordedProcess::open(options.pid, options.command);
  if (!opened.ok()) return fail(opened.message());
  attach::RecordedProcess& process = *opened;
  const pid_t pid = process.pid();

  attach::Interruption interruption;
  ::signal(SIGPIPE, SIG_IGN);
  // The collection at a Ruby's end only in a command memprof runs: an end proc stays in the
  // process (doing nothing) after the session, which a running app need not carry.
  native::NativeRequest request{options.stack_depth, !options.no_ruby_lines, options.track_mmap,
                                !options.no_gc && process.launched()};
  const std::string encoded_request = native::encode_native_request(request);
  auto started = attach::recording_request(pid, "native-start", encoded_request);
  if (!started.ok()) {
    bool ended = process.ended_after_failure();
    process.abandon();
    return fail(ended ? fmt::format("process {} ended before the tracking started", pid) : started.message());
  }
  auto first = attach::parse_native_snapshot(*started);
  if (!first.ok()) return fail(first.message());
  for (const std::string& problem : first->problems) print_stderr("memprof: {}\n", problem);
  SiteNamer namer(pid);
  auto start = std::chrono::steady_clock::now();
  const auto deadline = attach::deadline_after(*duration);
  print_stderr("memprof: tracking the malloc family in process {}{}\n", pid,
             process.launched() ? "" : " (Ctrl-C stops)");

  // The latest snapshot: what is reported if the process ends without a stop (_exit, a signal).
  attach::NativeSnapshotView last = std::move(*first);
  auto last_taken = std::chrono::steady_clock::now();
  // The agent saw exit() or _exit begin, or answered the stop: `last` is the whole run.
  // Otherwise the process was killed (a signal, an exit system call of its own) and `last` may
  // be old.
  bool final_snapshot = false;
  bool exiting = false;  // the last read found the process in exit()
  // The process exec'd: its agent and the tracking went with the old program.
  bool replaced = false;
  std::string not_followed;  // why the new program is not tracked
  // A launched command's new program is tracked from its first instruction instead (a wrapper
  // script's memory is not what its user asked about): false when it cannot be.
  auto follow_exec = [&]() -> Result<bool> {
    auto cannot_follow = [&](const std::string& why) {
      process.stop_following();
      not_followed = why;
      return false;
    };
    if (Status followed = process.follow_new_program(); !followed.ok()) return cannot_follow(followed.message());
    auto restarted = attach::recording_request(pid, "native-start", encoded_request);
    if (!restarted.ok()) return cannot_follow(restarted.message());
    MEMPROF_TRY(snapshot, attach::parse_native_snapshot(*restarted));
    for (const std::string& problem : snapshot.problems) print_stderr("memprof: {}\n", problem);
    last = std::move(snapshot);
    last_taken = start = std::chrono::steady_clock::now();
    namer.refresh({});
    print_stderr("memprof: process {} replaced its program (exec): tracking the malloc family in the new one\n",
               pid);
    return true;
  };
  while (!final_snapshot && !attach::Interruption::requested() && std::chrono::steady_clock::now() < deadline) {
    // The agent answers after `step`, or at once when the process starts exiting (a launched
    // command then ends without waiting for our next read).
    auto left = deadline - std::chrono::steady_clock::now();
    auto step = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::min<std::chrono::steady_clock::duration>(left, kReadInterval));
    auto read = attach::recording_request(pid, "native-read", fmt::format("wait_ms {}", std::max<int64_t>(step.count(), 0)));
    if (!read.ok()) {
      // Before waiting for an end: a new program held at its first instruction does not end.
      if ((replaced = process.replaced_program())) {
        auto followed = follow_exec();
        if (!followed.ok()) return fail(followed.message());
        if (*followed) {
          replaced = false;
          continue;
        }
        break;
      }
      if (process.ended_after_failure()) break;  // killed: the last snapshot is what there is
      return fail(read.message());
    }
    auto snapshot = attach::parse_native_snapshot(*read);
    if (!snapshot.ok()) return fail(snapshot.message());
    final_snapshot = snapshot->exiting;
    exiting = snapshot->exiting;
    last = std::move(*snapshot);
    last_taken = std::chrono::steady_clock::now();
  }
  if (!process.gone() && !replaced) {
    namer.refresh(last.snapshot);  // before the stop: a process in exit() goes once it has the reply
    process.stop_following();
    if (!options.no_gc && !exiting)
      if (auto said = attach::collect_garbage_before_readout(pid)) print_stderr("{}\n", *said);
    auto stopped = attach::recording_request(pid, "native-stop");
    if (stopped.ok()) {
      auto snapshot = attach::parse_native_snapshot(*stopped);
      if (!snapshot.ok()) return fail(snapshot.message());
      last = std::move(*snapshot);
      final_snapshot = true;
    } else if (!process.ended_after_failure() && !(replaced = process.replaced_program())) {
      return fail(stopped.message());
    }
  }
  if (replaced) {
    print_stderr(
               "memprof: warning: process {} replaced its program (exec): {}the report is the old program's "
               "last snapshot, taken {:.1f} s before memprof saw the exec\n",
               pid, not_followed.empty() ? "" : not_followed + "; ",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - last_taken).count());
  } else if (!final_snapshot) {
    // Without this, a program that was killed between two reads showed the counts of an
    // earlier read (all zeros for a short one) as if they were the whole run.
    print_stderr(
               "memprof: warning: process {} ended without exit() or _exit (a signal, or an exit system call "
               "of its own): the report is its last snapshot, taken {:.1f} s before memprof saw it end; what "
               "came after it is missing\n",
               pid, std::chrono::duration<double>(std::chrono::steady_clock::now() - last_taken).count());
  } else if (exiting && last.exit_gc_ms >= 0) {
    print_stderr(
               "memprof: a full garbage collection in process {} took {:.1f} ms at its end (after its at_exit "
               "blocks), so that blocks of unreachable Ruby objects are not counted as live (--no-gc skips it)\n",
               pid, last.exit_gc_ms);
  } else if (exiting && !options.no_gc && ran_ruby(last.snapshot)) {
    // The collection at the end did not run (exit!, or Ruby was never free to arrange it).
    print_stderr(
               "memprof: process {} ended by itself, with no garbage collection before the readout: live blocks "
               "include those of Ruby objects that were garbage at its exit (a GC.start at its end, or stopping it "
               "with Ctrl-C or --duration, leaves them out)\n",
               pid);
  }
  if (last.children > 0)
    print_stderr("memprof: {}\n", attach::child_processes_notice(pid, last.children, "their blocks are not in this report"));
  attach::NativeReportOptions report{options.top,
                                     std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                                     &namer.sources(), options.full_names};
  if (Status written = write_profiles(options, last.snapshot, namer, pid, report.seconds); !written.ok())
    return fail(written.message());
  std::string text = options.json ? attach::native_report_json(last, namer.index(), report)
                                  : attach::native_report_text(last, namer.index(), report);
  // A command that is exiting writes its last output (stdio's buffers) before the report.
  const bool ending = process.launched() && (exiting || process.ends_within(std::chrono::milliseconds(200)));
  if (ending) process.wait_for_end();
  if (!options.output.empty()) {
    if (Status written = report::write_output_file(options.output, {reinterpret_cast<const unsigned char*>(text.data()), text.size()});
        !written.ok())
      return fail(written.message());
  } else {
    // A launched command's stdout is its own (`native -- gzip -c f > f.gz` must still make a
    // gzip file): the report then goes to stderr.
    std::FILE* stream = process.launched() ? stderr : stdout;
    if (std::fwrite(text.data(), 1, text.size(), stream) != text.size() || std::fflush(stream) != 0)
      return fail(fmt::format("writing the report: {}", std::strerror(errno)));
  }
  // Stopped by --duration (or Ctrl-C, which it may ignore) while the command runs on: say why
  // memprof does not return yet, as trace does.
  if (process.launched() && !ending) process.say_waiting_for_end("tracking has stopped");
  return process.wait();
}

MEMPROF_COMMAND(
    "native", "Which library and call site leak native memory (malloc) in a running process",
    [](CLI::App& sub) -> std::function<int()> {
      auto options = std::make_shared<NativeOptions>();
      add_pid_option(sub, options->pid, "Process to track");
      sub.add_option("--duration", options->duration, "Stop after this long (20s, 2m); default: until Ctrl-C");
      add_count_option(sub, "--top", options->top, "Rows per section (default 20)");
      sub.add_option("--stack", options->stack_depth,
                     "Frames per site, 1 to 32 (default 1: the allocator's caller alone); deeper stacks "
                     "need libunwind.so.8")
          ->check(CLI::Range(1, 32));
      // A plain flag: CLI11's "!--no-..." form printed "--no-ruby-lines{false}" in --help.
      sub.add_flag("--no-ruby-lines", options->no_ruby_lines, "In a Ruby process, do not split sites by Ruby line");
      sub.add_flag("--no-gc", options->no_gc,
                   "In a Ruby process, no full garbage collection before the last readout (blocks of "
                   "unreachable objects not yet swept then count as live)");
      sub.add_flag("--mmap", options->track_mmap,
                   "Also anonymous mmap, munmap and mremap calls (regions as blocks; the allocator's "
                   "own mappings are counted once, as its blocks)");
      sub.add_option("--pprof", options->pprof_path,
                     "Also write FILE in pprof's heap-profile format (go tool pprof, Pyroscope, Parca)")
          ->check(not_empty());
      sub.add_option("--collapsed", options->collapsed_path, "Also write collapsed stacks to FILE (flamegraph.pl)")
          ->check(not_empty());
      sub.add_option("--flame-graph", options->flame_graph_path, "Also write FILE, one HTML page with a flame graph")
          ->check(not_empty());
      sub.add_option("--value", options->value,
                     "What --collapsed and --flame-graph weigh: inuse_space (default, leaked bytes), "
                     "inuse_objects, alloc_space, alloc_objects")
          ->check(CLI::IsMember({"inuse_space", "inuse_objects", "alloc_space", "alloc_objects"}));
      sub.add_flag("--json", options->json, "Every call site with its counts, as JSON");
      sub.add_flag("--full-names", options->full_names,
                   "C++ functions with their parameters and template arguments in the tables (default: "
                   "short, std::vector<...>::_M_realloc_insert<...>; --json has them in full)");
      sub.add_option("-o,--output", options->output,
                     "Write the report to FILE, - for stdout (default: stderr when memprof runs the "
                     "command, whose stdout stays its own; stdout with -p)")
          ->check(not_empty());
      sub.add_option("command", options->command, "Command to start and track (after --)");
      sub.footer(
          "memprof native -p PID --duration 20s    what PID allocates with malloc and does not free\n"
          "memprof native -- ./server               the same for a command, from its first instruction\n"
          "memprof native -p PID --stack 16 --pprof heap.pb.gz --flame-graph heap.html\n\n"
          "The agent (as in memprof attach) hooks malloc, calloc, realloc, reallocarray, free,\n"
          "posix_memalign, aligned_alloc, memalign, valloc and pvalloc at their entry, so every\n"
          "library's calls are seen, libraries loaded later included. Each block allocated from\n"
          "the start is kept with its site: the call site (return address; a block that libc,\n"
          "libstdc++, operator new or Ruby's ruby_xmalloc makes for its caller is charged to that\n"
          "caller), in a Ruby process the Ruby file:line running on that thread (a C extension's\n"
          "leak is charged to the line that called it), and with --stack N the N frames above\n"
          "the allocator (libunwind; ~180 ns more per allocation at 16 frames). Frees of blocks\n"
          "allocated before the start are counted apart. At the end: what is still live (leaked) by\n"
          "library, call site, Ruby line and stack, what was allocated and how much was\n"
          "temporary (freed by the same thread before its next allocation), and what was live\n"
          "at the peak; --pprof (go tool pprof, Pyroscope, Parca), --collapsed (flamegraph.pl)\n"
          "and --flame-graph (one HTML page) write the same sites as stacks, the Ruby line at\n"
          "the root. Ctrl-C or --duration stops; in a Ruby process a full GC runs first\n"
          "(--no-gc: none), and a Ruby command that ends by itself is collected after its\n"
          "at_exit blocks, so that the buffers of objects that are garbage by then are not\n"
          "listed as live. The report goes to stdout with -p, to stderr for a command (its\n"
          "stdout stays its own), or to -o FILE. Every patched byte is restored. One process is\n"
          "tracked, not its children (the report says how many it started; -p CHILD tracks one).\n"
          "Live view: memprof top -p PID --native. docs/native.md.");
      return [options] { return run_native(*options); };
    });

}  // namespace
}  // namespace memprof::cli
