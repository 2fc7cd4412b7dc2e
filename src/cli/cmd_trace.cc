// memprof trace -p PID -x SYM ...: ltrace-style lines for the calls a running process makes to
// the named functions, through hooks the agent installs inside it (src/tracer), or the same
// for a command it starts (memprof trace -x SYM -- CMD ARGS).
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <fmt/ranges.h>

#include "attach/agent_client.h"
#include "attach/duration.h"
#include "attach/interruption.h"
#include "attach/recorded_process.h"
#include "attach/unexported_functions.h"
#include "cli/command.h"
#include "core/elf/demangle.h"
#include "core/util/print_stderr.h"
#include "core/util/scoped_fd.h"
#include "core/util/whole_lines.h"
#include "heap/units.h"
#include "trace/capture_plan.h"
#include "trace/prototype_files.h"
#include "trace/trace_output.h"
#include "trace/trace_readout.h"
#include "tracer/symbol_filter.h"
#include "tracer/trace_wire.h"

namespace memprof::cli {
namespace {

struct TraceOptions {
  pid_t pid = 0;
  std::vector<std::string> symbols;  // -x and -e: ltrace filter expressions, or events (ruby:gc)
  std::vector<std::string> call_filters;  // -e, before they join `symbols`
  std::vector<std::optional<tracer::SymbolFilter>> filters;  // of `symbols`, parsed; nullopt: an event
  std::vector<std::string> libraries;
  std::vector<std::string> prototype_files;
  int timestamps = 0;
  bool durations = false;
  bool summary = false;
  bool json = false;
  bool ruby_caller = false;
  bool verbose = false;
  bool demangle = false;
  std::string output;
  std::string duration;
  size_t string_limit = 32;
  std::vector<std::string> command;
};

// How often the CLI drains the agent's rings: each thread's ring holds 8,192 calls.
constexpr auto kReadInterval = std::chrono::milliseconds(10);
// Prototypes from the usual ltrace.conf places, then the user's -F files, which win.
struct Prototypes {
  trace::PrototypeSet defaults;
  trace::PrototypeSet user;
  trace::PrototypeSet events;  // memprof's own: ruby:gc
  const trace::Prototype* find(std::string_view name) const {
    for (const trace::PrototypeSet* set : {&events, &user, &defaults})
      if (const trace::Prototype* found = set->find(name)) return found;
    return nullptr;
  }
};

// ruby:gc(GC count, whether this pause started a collection or continued one).
trace::PrototypeSet event_prototypes() {
  auto parsed = trace::parse_prototypes("void gc(ulong, enum(step, start));", "memprof");
  trace::PrototypeSet set;
  if (!parsed.ok()) return set;
  trace::Prototype gc = *parsed->find("gc");
  gc.name = "ruby:gc";
  set.add(std::move(gc));
  return set;
}

Result<Prototypes> load_prototypes(const std::vector<std::string>& files) {
  Prototypes out;
  out.events = event_prototypes();
  // Problems in system files (Debian's /etc/ltrace.conf has a few struct lines) are ltrace's
  // business; the user's own files must be right.
  auto defaults = trace::load_prototype_files(trace::default_prototype_files(), trace::MissingFile::kSkip);
  if (defaults.ok()) out.defaults = std::move(defaults->prototypes);
  if (files.empty()) return out;
  MEMPROF_TRY(user, trace::load_prototype_files(files, trace::MissingFile::kError));
  if (!user.problems.empty()) {
    std::string message = "bad prototype file: " + user.problems.front();
    if (user.problems.size() > 1) message += fmt::format(" (and {} more lines)", user.problems.size() - 1);
    return err("{}", message);
  }
  out.user = std::move(user.prototypes);
  return out;
}

// Whether some -x filter may trace a function named `name` (in some object).
bool may_trace(const TraceOptions& options, const std::string& name) {
  return std::any_of(options.filters.begin(), options.filters.end(),
                     [&](const auto& filter) { return filter && filter->may_select(name); });
}

tracer::TraceRequest make_request(const TraceOptions& options, const Prototypes& prototypes) {
  tracer::TraceRequest request;
  request.patterns = options.symbols;
  request.libraries = options.libraries;
  request.records = !options.summary;
  request.ruby_caller = options.ruby_caller;
  request.verbose = options.verbose;
  for (const trace::PrototypeSet* set : {&prototypes.defaults, &prototypes.user})
    for (const auto& [name, prototype] : set->prototypes())
      if (may_trace(options, name)) {
        trace::ArgumentCapture plan = trace::capture_plan(*prototypes.find(name));
        if (plan != trace::ArgumentCapture{}) request.captures[name] = plan;
      }
  return request;
}

int64_t realtime_offset_ns() {
  timespec real, mono;
  ::clock_gettime(CLOCK_REALTIME, &real);
  ::clock_gettime(CLOCK_MONOTONIC, &mono);
  return (static_cast<int64_t>(real.tv_sec) - mono.tv_sec) * 1000000000 + (real.tv_nsec - mono.tv_nsec);
}

class TracePrinter {
 public:
  TracePrinter(const TraceOptions& options, const Prototypes& prototypes, pid_t pid, int out_fd)
      : options_(options), prototypes_(prototypes), pid_(pid), out_fd_(out_fd) {
    line_.timestamps = options.timestamps;
    line_.durations = options.durations;
    line_.format.string_limit = std::min(options.string_limit, trace::kLongestStringLimit);
    line_.realtime_offset_ns = realtime_offset_ns();
  }

  // `unfinished`: show the calls that had not returned (the trace's stop, an exec that replaced
  // the program), else leave them out (an exec that failed returns to them).
  void take(trace::Readout readout, bool unfinished = false) {
    for (const std::string& problem : readout.problems) print_stderr("memprof: {}\n", problem);
    // A function seen through the GOT only came with a problem line that says why.
    for (const trace::ReadoutFunction& function : readout.functions) {
      // Prototypes are found by the symbol; -C shows the C++ name.
      functions_[function.id] = {options_.demangle ? elf::demangle(function.name) : function.name, function.object,
                                 prototypes_.find(function.name)};
      traced_names_.insert(function.name);
      matched_names_.insert(function.name);
    }
    matched_names_.insert(readout.untraceable.begin(), readout.untraceable.end());
    std::stable_sort(readout.records.begin(), readout.records.end(),
                     [](const trace::CallRecord& a, const trace::CallRecord& b) { return a.entry_ns < b.entry_ns; });
    std::string text;
    for (const trace::CallRecord& record : readout.records) {
      auto function = functions_.find(record.function);
      if (function == functions_.end()) continue;
      if (record.outcome == trace::CallOutcome::kUnfinished && !unfinished) continue;
      text += options_.json ? trace::call_json(record, function->second, line_)
                            : trace::call_line(record, function->second, line_);
      text += '\n';
    }
    write(text);
    dropped_ = readout.dropped;
    untraced_ = readout.untraced;
    in_flight_ = readout.in_flight;
    children_ = readout.children;
    totals_ = std::move(readout.totals);
    // Said at once: a trace of a preforking server's master shows none of its workers' calls.
    if (children_noticed_ == 0 && children() > 0) note_children();
  }

  // The process exec'd and is traced again: the next readouts' function ids are the new
  // program's. What the old one counted stays in the summary, by function name.
  void new_program() {
    for (trace::SummaryRow& row : called_rows()) earlier_rows_.push_back(std::move(row));
    earlier_dropped_ += dropped_;
    earlier_untraced_ += untraced_;
    earlier_children_ += children_;
    functions_.clear();
    totals_.clear();
    dropped_ = untraced_ = in_flight_ = children_ = 0;
  }

  // This program's traced functions, by name (a library loaded at two addresses has one each).
  size_t functions() const {
    std::set<std::string_view> names;
    for (const auto& [id, function] : functions_) names.insert(function.name);
    return names.size();
  }
  // The names of the functions traced in every program the process ran.
  const std::set<std::string>& traced_names() const { return traced_names_; }
  // Those and the ones that matched a pattern but cannot be traced (a problem line said why).
  const std::set<std::string>& matched_names() const { return matched_names_; }
  // Why the trace could not be written (a closed pipe, a full disk), empty while it can.
  const std::string& write_error() const { return write_error_; }

  void finish() {
    if (options_.summary) {
      // As ltrace -c: functions called, by name. A glob ('sqlite3_*') matches hundreds never called.
      std::vector<trace::SummaryRow> rows = called_rows();
      rows.insert(rows.end(), earlier_rows_.begin(), earlier_rows_.end());
      std::set<std::string> called;
      for (const trace::SummaryRow& row : rows) called.insert(row.function);
      write(options_.json ? trace::summary_json(std::move(rows)) : trace::summary_table(std::move(rows)));
      if (const size_t never_called = traced_names_.size() - called.size(); never_called > 0) {
        if (traced_names_.size() == 1)
          print_stderr("memprof: the traced function was not called\n");
        else
          print_stderr("memprof: {} of the {} traced functions {} not called\n", never_called,
                     traced_names_.size(), never_called == 1 ? "was" : "were");
      }
    }
    if (const uint64_t dropped = earlier_dropped_ + dropped_; dropped > 0)
      print_stderr("memprof: {} calls were counted but not shown: the reader fell behind\n", heap::count_text(dropped));
    if (const uint64_t untraced = earlier_untraced_ + untraced_; untraced > 0)
      print_stderr("memprof: {} calls were not traced (nested over 128 deep, or over 512 threads)\n",
                 heap::count_text(untraced));
    if (in_flight_ > 0)
      print_stderr("memprof: {} traced call{} not returned when the trace stopped\n", in_flight_,
                 in_flight_ == 1 ? " had" : "s had");
    if (children() > children_noticed_) note_children();
  }

 private:
  // This program's functions that were called, with their totals.
  std::vector<trace::SummaryRow> called_rows() const {
    std::vector<trace::SummaryRow> rows;
    for (const trace::ReadoutTotals& total : totals_)
      if (auto function = functions_.find(total.id); function != functions_.end() && total.calls > 0)
        rows.push_back({function->second.name, total.calls, total.nanoseconds});
    return rows;
  }

  // Child processes the process started since the trace started, in every program it ran.
  uint64_t children() const { return earlier_children_ + children_; }

  void note_children() {
    children_noticed_ = children();
    print_stderr("memprof: {}\n", attach::child_processes_notice(pid_, children_noticed_, "their calls are not in this trace"));
  }

  // Whole lines per write(2): the traced program may share this terminal or pipe.
  void write(const std::string& text) {
    if (!write_error_.empty() || text.empty()) return;
    if (const int error = write_whole_lines(out_fd_, text); error != 0) write_error_ = std::strerror(error);
  }

  const TraceOptions& options_;
  const Prototypes& prototypes_;
  pid_t pid_;
  int out_fd_;
  std::string write_error_;
  trace::LineOptions line_;
  std::map<uint32_t, trace::FunctionInfo> functions_;
  std::set<std::string> traced_names_;
  std::set<std::string> matched_names_;
  std::vector<trace::ReadoutTotals> totals_;
  uint64_t dropped_ = 0, untraced_ = 0, in_flight_ = 0, children_ = 0;
  uint64_t children_noticed_ = 0;  // the count the last notice gave
  // What the programs the process ran before an exec counted.
  std::vector<trace::SummaryRow> earlier_rows_;  // called in the programs the process ran before an exec
  uint64_t earlier_dropped_ = 0, earlier_untraced_ = 0, earlier_children_ = 0;
};

// The indexes in options.symbols of the patterns that match no function of any program of the
// process (traced, or said to be untraceable); `events`: the event patterns (ruby:gc) too, which
// are traced under their own name.
std::vector<size_t> unmatched_patterns(const TraceOptions& options, const TracePrinter& printer, bool events) {
  std::vector<size_t> unmatched;
  for (size_t i = 0; i < options.symbols.size(); ++i) {
    const std::string& pattern = options.symbols[i];
    const auto& filter = options.filters[i];
    if (!filter && !events) continue;
    bool matched = std::any_of(printer.matched_names().begin(), printer.matched_names().end(), [&](const std::string& name) {
      return filter ? filter->may_select(name) : name == pattern;
    });
    if (!matched) unmatched.push_back(i);
  }
  return unmatched;
}

// " in an object named by -l 'A' or 'B'" when -l narrowed where functions are looked for.
std::string libraries_named(const TraceOptions& options) {
  if (options.libraries.empty()) return "";
  std::string out = " in an object named by -l";
  for (size_t i = 0; i < options.libraries.size(); ++i)
    out += fmt::format("{} '{}'", i == 0 ? "" : " or", options.libraries[i]);
  return out;
}

// "; defined without being exported (...): foo (app), ..." when the process's objects define
// functions matching `filter`, a single glob, that trace cannot hook by name.
std::string unexported_note(pid_t pid, const tracer::SymbolFilter& filter) {
  constexpr size_t kShown = 3;
  std::optional<std::string> glob = filter.plain_glob();
  if (!glob) return "";  // names a library, or more than one glob
  std::vector<std::string> functions = attach::unexported_functions(pid, *glob, kShown + 1);
  if (functions.empty()) return "";
  const bool more = functions.size() > kShown;
  if (more) functions.pop_back();
  return fmt::format("; defined without being exported (static, hidden by visibility, or in an executable "
                     "linked without -rdynamic), which trace cannot hook by name: {}{}",
                     fmt::join(functions, ", "), more ? " and more" : "");
}

// Parses -e into -x and every -x into options.filters; "" when all are good, else the error.
std::string parse_filters(TraceOptions& options) {
  for (const std::string& expression : options.call_filters) {
    auto filter = tracer::SymbolFilter::parse(expression);
    if (!filter.ok()) return fmt::format("-e '{}': {}", expression, filter.message());
    if (filter->names_a_library())
      return fmt::format("-e '{}': ltrace's -e @LIBRARY picks the calls that LIBRARY makes (through its PLT); "
                         "memprof hooks functions where they are defined: -x '{}' traces the functions that "
                         "LIBRARY defines, whoever calls them", expression, expression);
    options.symbols.push_back(expression);
  }
  if (options.symbols.empty()) return "name the functions to trace with -x SYMBOL (globs such as 'sqlite3_*' work)";
  for (const std::string& pattern : options.symbols) {
    if (pattern.empty()) return "-x needs a function name or a glob, not an empty string";
    if (tracer::is_event_pattern(pattern)) {
      options.filters.emplace_back();
      continue;
    }
    auto filter = tracer::SymbolFilter::parse(pattern);
    if (!filter.ok()) return fmt::format("-x '{}': {}", pattern, filter.message());
    options.filters.emplace_back(std::move(*filter));
  }
  for (const std::string& glob : options.libraries)
    if (std::string problem = tracer::malformed_glob(glob); !problem.empty())
      return fmt::format("-l '{}': {}", glob, problem);
  return "";
}

int run_trace(TraceOptions options) {
  if (std::string problem = parse_filters(options); !problem.empty()) return fail(problem);
  auto duration = attach::parse_optional_duration(options.duration);
  if (!duration.ok()) return fail(duration.message());
  auto prototypes = load_prototypes(options.prototype_files);
  if (!prototypes.ok()) return fail(prototypes.message());
  if (options.string_limit > trace::kLongestStringLimit)
    print_stderr("memprof: -s {}: strings are shown up to {} characters (what a call's record holds)\n",
               options.string_limit, trace::kLongestStringLimit);
  ScopedFd file;  // close-on-exec: not the traced program's
  const bool to_stdout = options.output == "-";
  if (!options.output.empty() && !to_stdout) {
    file.reset(::open(options.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
    if (!file.valid()) return fail(fmt::format("cannot write {}: {}", options.output, std::strerror(errno)));
  }

  auto opened = attach::RecordedProcess::open(options.pid, options.command);
  if (!opened.ok()) return fail(opened.message());
  attach::RecordedProcess& process = *opened;
  const pid_t pid = process.pid();
  // Ends the trace of a process that ended (or, launched, that memprof waits for): the
  // command's status, or 0.
  // A launched command is told at its end which patterns none of its programs had: a wrapper
  // script it execs first (an rbenv shim) has none of them, nor a Ruby for ruby:gc. A running
  // process is told at once (ruby:gc in one without Ruby is refused).
  auto warn_unmatched = [&](const TracePrinter& printer, bool at_end) {
    if (at_end != process.launched()) return;
    for (size_t i : unmatched_patterns(options, printer, at_end)) {
      const std::string& pattern = options.symbols[i];
      const auto& filter = options.filters[i];  // none for an event
      if (!filter)
        print_stderr("memprof: no program of the command ran a supported Ruby: {} recorded nothing\n", pattern);
      else
        print_stderr("memprof: {} a function matching '{}'{}{}{}\n",
                   at_end ? "no program of the command defined" : "no loaded object exports", pattern,
                   libraries_named(options), at_end ? "" : " (objects loaded later are watched)",
                   at_end ? "" : unexported_note(pid, *filter));
    }
  };
  // `ending`: the process has ended or is exiting, and what it writes as it exits (stdio's
  // buffers) comes before the summary, as with ltrace. One that runs on after Ctrl-C or
  // --duration gets its summary at once.
  auto finish_with_process = [&](TracePrinter& printer, bool ending) {
    if (ending) process.wait_for_end();
    printer.finish();
    warn_unmatched(printer, true);
    if (!process.launched()) print_stderr("memprof: process {} ended while traced\n", pid);
    return process.wait();
  };
  const std::string request = tracer::encode_trace_request(make_request(options, *prototypes));
  // The process exec'd, and its new program is traced from its first instruction (a launched
  // command's), or the trace ended with the old one: the exit status, or nullopt to go on.
  auto follow_exec = [&](TracePrinter& printer) -> std::optional<int> {
    auto trace_ended = [&](const std::string& why) {
      process.stop_following();
      printer.finish();
      warn_unmatched(printer, true);
      print_stderr("memprof: process {} replaced its program (exec): {}; the trace ended with the old one\n",
                 pid, why);
      return process.wait();
    };
    printer.new_program();
    if (Status followed = process.follow_new_program(); !followed.ok()) return trace_ended(followed.message());
    auto restarted = attach::recording_request(pid, "trace-start", request);
    if (!restarted.ok()) return trace_ended(restarted.message());
    auto readout = trace::parse_readout(*restarted);
    if (!readout.ok()) return fail(readout.message());
    printer.take(std::move(*readout));
    print_stderr("memprof: process {} replaced its program (exec): tracing {} function{} in the new one\n",
               pid, printer.functions(), printer.functions() == 1 ? "" : "s");
    return std::nullopt;
  };
  // A request failed: the process replaced its program (followed while `may_follow`), ended,
  // or the agent gave an error. The exit status, or nullopt to go on.
  auto after_failure = [&](TracePrinter& printer, const std::string& message,
                           bool may_follow) -> std::optional<int> {
    // Before waiting for an end: a new program held at its first instruction does not end.
    if (process.replaced_program()) {
      if (may_follow) return follow_exec(printer);
      printer.finish();
      warn_unmatched(printer, true);
      print_stderr("memprof: process {} replaced its program (exec): the trace ended with the old one\n", pid);
      return process.wait();
    }
    if (process.ended_after_failure()) return finish_with_process(printer, true);
    return fail(message);
  };

  attach::Interruption interruption;
  // A reader that goes away (`| head`) makes writes fail with EPIPE: the trace then stops
  // properly instead of the CLI dying with its hooks left in the process.
  ::signal(SIGPIPE, SIG_IGN);
  // A launched command's stdout is its own (`trace -- gzip -c f > f.gz` must still make a gzip
  // file): the trace then goes to stderr, as ltrace's does.
  const int report_fd = file.valid() ? file.get() : process.launched() && !to_stdout ? STDERR_FILENO : STDOUT_FILENO;
  TracePrinter printer(options, *prototypes, pid, report_fd);
  auto started = [&] {
    // Hooking thousands of functions of a busy process takes seconds and cannot be cut short.
    attach::InterruptionNotice notice("memprof: the trace stops as soon as its functions are hooked\n");
    return attach::recording_request(pid, "trace-start", request);
  }();
  if (!started.ok()) {
    if (process.ended_after_failure()) return finish_with_process(printer, true);
    process.abandon();  // a launched command was started to be traced, and cannot be
    return fail(started.message());
  }
  auto first = trace::parse_readout(*started);
  if (!first.ok()) return fail(first.message());
  printer.take(std::move(*first));
  warn_unmatched(printer, false);
  print_stderr("memprof: tracing {} function{} in process {}{}{}\n", printer.functions(),
             printer.functions() == 1 ? "" : "s", pid, printer.functions() == 0 ? ", watching dlopen" : "",
             process.launched() ? "" : " (Ctrl-C stops)");

  const auto deadline = attach::deadline_after(*duration);
  bool exiting = false;
  while (!exiting && printer.write_error().empty() && !attach::Interruption::requested() &&
         std::chrono::steady_clock::now() < deadline) {
    if (!attach::Interruption::sleep_for(kReadInterval)) break;
    auto read = attach::recording_request(pid, "trace-read");
    if (!read.ok()) {
      if (auto status = after_failure(printer, read.message(), true)) return *status;
      continue;
    }
    auto readout = trace::parse_readout(*read);
    if (!readout.ok()) return fail(readout.message());
    exiting = readout->exiting;  // the process waits in exit() for the stop below
    const bool exec = readout->exec;  // it waited in execve for this readout: everything before is in
    // An exec that fails (execvp's directories without the program) returns to the program,
    // which is traced on: its calls in flight are not over.
    const bool replaced = exec && process.replaced_program();
    printer.take(std::move(*readout), replaced);
    if (replaced)
      if (auto status = follow_exec(printer)) return *status;
  }
  process.stop_following();
  auto stopped = attach::recording_request(pid, "trace-stop");
  if (!stopped.ok()) return *after_failure(printer, stopped.message(), false);
  auto readout = trace::parse_readout(*stopped);
  if (!readout.ok()) return fail(readout.message());
  printer.take(std::move(*readout), true);
  if (!printer.write_error().empty()) {
    const std::string problem = fmt::format("writing the trace: {} (the trace was stopped)", printer.write_error());
    if (!process.launched()) return fail(problem);
    // `memprof trace -- server | head`: the command is memprof's child, and leaving it to run
    // on unseen (an orphan of init) would be worse than waiting for it, as after Ctrl-C.
    process.say_waiting_for_end(problem);
    return finish_with_process(printer, exiting);
  }
  if (exiting || process.launched()) {
    // Stopped by Ctrl-C or --duration while the command runs on (it may ignore SIGINT).
    const bool ending = exiting || process.ends_within(std::chrono::milliseconds(200));
    if (!ending) process.say_waiting_for_end("the trace has stopped");
    return finish_with_process(printer, ending);
  }
  printer.finish();
  return 0;
}

MEMPROF_COMMAND(
    "trace", "ltrace-style library call tracing of a running process, through in-process hooks",
    [](CLI::App& sub) -> std::function<int()> {
      auto options = std::make_shared<TraceOptions>();
      add_pid_option(sub, options->pid, "Process to trace");
      // One value per -x, -l, -F: `-x f -- cmd -c` must leave `cmd -c` to the command.
      sub.add_option("-x", options->symbols,
                     "Functions to trace (repeatable): a glob such as 'sqlite3_*', or an ltrace filter "
                     "expression: malloc+free, 'sqlite3_*@libsqlite3*', '*@MAIN-main' (see below)")
          ->allow_extra_args(false);
      sub.add_option("-e", options->call_filters,
                     "ltrace's -e, taken as -x: the functions named, at their entry, whoever calls them "
                     "(no @LIBRARY, which in ltrace picks the calling library)")
          ->allow_extra_args(false);
      sub.add_option("-l,--library", options->libraries,
                     "Only functions defined in objects whose file name matches (repeatable glob)")
          ->allow_extra_args(false);
      sub.add_option("-F", options->prototype_files, "ltrace prototype file (repeatable; read after the defaults)")
          ->allow_extra_args(false);
      sub.add_flag("-t", options->timestamps, "Time of day per call; -tt adds microseconds, -ttt is epoch seconds");
      sub.add_flag("-T", options->durations, "Time spent in each call");
      sub.add_flag("-c", options->summary, "Count calls and time per function; print a table at the end");
      add_count_option(sub, "-s", options->string_limit, "String characters shown (default 32, at most 46)");
      sub.add_option("-o,--output", options->output,
                     "Write the trace to FILE, - for stdout (default: stderr when memprof runs the command, "
                     "whose stdout stays its own; stdout with -p)")
          ->check(not_empty());
      sub.add_option("--duration", options->duration, "Stop after this long (30s, 2m); default: until Ctrl-C");
      sub.add_flag("--json", options->json, "One JSON object per call instead of ltrace's lines");
      sub.add_flag("-C,--demangle", options->demangle, "Show C++ function names demangled, as ltrace -C");
      sub.add_flag("-v,--verbose", options->verbose,
                   "Say why for each function traced only through the GOT or not at all (without it, an "
                   "object with more than 3 of a kind gets one line naming them)");
      sub.add_flag("--ruby-caller", options->ruby_caller,
                   "Show the Ruby file:line that made each call (Ruby processes); '(without the "
                   "GVL)' for calls Ruby makes in a blocking region (its IO, a C extension's "
                   "query), where the line is not read");
      sub.add_option("command", options->command, "Command to start and trace (after --)");
      sub.footer(
          "memprof trace -p PID -x sqlite3_prepare_v2 -ttT    prints each call as ltrace does:\n"
          "  12:01:02.123456 [4242] sqlite3_prepare_v2@libsqlite3.so.0(0x5612, \"SELECT 1\", -1, ...) = 0 <0.000041>\n"
          "memprof trace -c -x 'sqlite3_*' -- ruby app.rb    starts a command and counts its calls.\n\n"
          "-x takes ltrace's filter expressions: rules [+-]SYMBOL[@LIBRARY] chained, each a glob,\n"
          "that add (+) and remove (-) functions in turn; LIBRARY is the file name of the object\n"
          "defining the function (as -l), MAIN the program, /... a path. Every + and - starts a\n"
          "rule: write a library name that has one with ? ('@ld?linux*') or give it to -l.\n\n"
          "The agent (as in memprof attach) hooks each matching function at its entry inside the\n"
          "process: every caller is seen -- other libraries, the defining library itself,\n"
          "pointers from dlsym -- and libraries loaded later by dlopen (require) are traced from\n"
          "their first call. No thread stops per call (ltrace stops the process at each one).\n"
          "Arguments are shown from ltrace prototypes (/etc/ltrace.conf, ~/.ltrace.conf and -F\n"
          "files); strings are copied at the call, at most 46 characters. Without a prototype,\n"
          "four arguments in hex. Ctrl-C or --duration stops the trace; every patched byte is\n"
          "restored and the process goes on. Calls left by longjmp or an exception show\n"
          "'= <unwound>'; calls not returned at the stop (or ended by an exec)\n"
          "'<unfinished ...>'. A launched command's exit status is memprof's. One process is\n"
          "traced, not its children (memprof says how many it started; -p CHILD traces one).");
      return [options] { return run_trace(*options); };
    });

}  // namespace
}  // namespace memprof::cli
