// memprof report -p PID --duration 30s: what an attached process allocated and retained during a
// window, printed as Memprof.report prints a block's.
#include <unistd.h>

#include <simdjson.h>

#include <string>

#include "attach/agent_client.h"
#include "attach/duration.h"
#include "attach/interruption.h"
#include "attach/json_field.h"
#include "attach/report_profile.h"
#include "cli/command.h"
#include "core/proc/process_access.h"
#include "core/util/mapped_file.h"
#include "core/util/print_stderr.h"
#include "profile/pprof_writer.h"

namespace memprof::cli {
namespace {

struct ReportOptions {
  pid_t pid = 0;
  std::string duration = "30s";
  size_t top = 50;
  bool json = false;
  std::string pprof_path;
  std::string input;
};

// --pprof: the report's rows as pprof (attach/report_profile.h). `source` names where a report
// that cannot be read came from.
Status write_report_pprof(const std::string& path, std::string_view report_json, std::string_view source) {
  auto stacks = attach::ruby_report_stack_profile(report_json);
  if (!stacks.ok()) return err("{}: {}", source, stacks.message());
  return profile::write_pprof(path, *stacks);
}

// memprof report --input REPORT.json --pprof FILE: a saved report converted, no process involved.
int convert_saved_report(const ReportOptions& options) {
  if (options.pid != 0) return fail("--input converts a saved report: it cannot be used with -p");
  if (options.pprof_path.empty()) return fail("--input needs --pprof FILE (what to write)");
  auto file = MappedFile::open(options.input);
  if (!file.ok()) return fail(file.message());
  std::string_view text(reinterpret_cast<const char*>(file->bytes().data()), file->bytes().size());
  if (Status written = write_report_pprof(options.pprof_path, text, options.input); !written.ok())
    return fail(written.message());
  return 0;
}

int run_report(const ReportOptions& options) {
  if (!options.input.empty()) return convert_saved_report(options);
  if (options.pid == 0) return fail("report an attached process (-p PID) or convert a saved report (--input FILE)");
  auto duration = attach::parse_duration(options.duration);
  if (!duration.ok()) return fail(duration.message());
  attach::Interruption interruption;
  // With this memprof's pid: the agent refuses a second report while this one's window is open.
  auto opened = attach::ruby_request(options.pid, fmt::format("report-begin {}", ::getpid()));
  if (!opened.ok()) return fail(opened.message());
  print_stderr("window open for {:g} s in process {} (Ctrl-C closes it early)\n",
             static_cast<double>(duration->count()) / 1000, options.pid);
  bool full = attach::Interruption::sleep_for(*duration);
  // Closed on every path, Ctrl-C included: an open window keeps the free watch on.
  auto closed = attach::ruby_request(options.pid, fmt::format("report-end {}", options.top));
  if (!closed.ok() && proc::process_gone(options.pid))
    return fail(fmt::format("process {} ended during the window: nothing to report", options.pid));
  if (!closed.ok() && !attach::agent_listening(options.pid))
    return fail(fmt::format("the agent left process {} during the window (memprof detach): nothing to report",
                            options.pid));
  if (!closed.ok()) return fail(closed.message());
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(*closed).get(root) != simdjson::SUCCESS)
    return fail("malformed reply from the agent");
  double seconds = 0;
  double pause_ms = 0;
  std::string_view text;
  attach::read_field(root, "seconds", seconds);
  attach::read_field(root, "closing_pause_ms", pause_ms);
  attach::read_field(root, "text", text);
  if (!options.pprof_path.empty()) {
    Status written = write_report_pprof(options.pprof_path, *closed, "the agent's reply");
    if (!written.ok()) return fail(written.message());
  }
  if (options.json) {
    fmt::print("{}\n", *closed);
    return 0;
  }
  print_stderr("window of {:.1f} s{}; closing it (a full GC) paused the process {:.0f} ms\n",
             seconds, full ? "" : " (interrupted)", pause_ms);
  fmt::print("{}", text);
  return 0;
}

MEMPROF_COMMAND("report", "Allocated and retained in an attached process during a window",
                [](CLI::App& sub) -> std::function<int()> {
                  auto options = std::make_shared<ReportOptions>();
                  add_pid_option(sub, options->pid, "Attached process");
                  sub.add_option("--duration", options->duration,
                                 "How long the window stays open (default 30s)");
                  add_count_option(sub, "--top", options->top, "Lines per section (default 50)");
                  sub.add_flag("--json", options->json,
                               "Print {seconds, closing_pause_ms, text, report: {allocated, "
                               "retained}}");
                  sub.add_option("--pprof", options->pprof_path,
                                 "Also write FILE in pprof's heap-profile format: alloc_* what the "
                                 "window allocated, inuse_* what it retained, by class and file:line")
                      ->check(not_empty());
                  sub.add_option("--input", options->input,
                                 "Convert a saved report (Memprof::Report#to_json, or --json's "
                                 "output) with --pprof instead of reading a process");
                  sub.footer(
                      "Opens a window in a process `memprof attach` started tracking, waits,\n"
                      "and prints what the process allocated in it and what of that is still\n"
                      "alive after a full GC at the end, by gem, file, file:line and class, as\n"
                      "Memprof.report does. The process's GC keeps running: objects freed in\n"
                      "the window count as allocated with their size when freed. While the\n"
                      "window is open every free is watched (one event per freed object); the\n"
                      "closing GC is one full collection. Ctrl-C closes the window early.");
                  return [options] { return run_report(*options); };
                });

}  // namespace
}  // namespace memprof::cli
