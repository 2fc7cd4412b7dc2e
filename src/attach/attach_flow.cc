#include "attach/attach_flow.h"

#include <filesystem>
#include <thread>

#include <simdjson.h>

#include "attach/json_field.h"

#include "attach/agent_client.h"
#include "attach/installation.h"
#include "attach/ruby_target.h"
#include "core/proc/process_view.h"
#include "inject/inject.h"

namespace memprof::attach {

namespace {

// How long a freshly injected agent may take to open its socket.
constexpr auto kSocketWait = std::chrono::seconds(3);

Status wait_for_socket(pid_t pid) {
  auto deadline = std::chrono::steady_clock::now() + kSocketWait;
  while (!agent_listening(pid)) {
    if (std::chrono::steady_clock::now() > deadline)
      return err("process {}: the agent was loaded but its socket did not appear within {} s "
                 "(see the process's stderr)",
                 pid, kSocketWait.count());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ok_status();
}

Result<std::string> json_string_field(const std::string& json, const char* key) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json).get(root) != simdjson::SUCCESS) return err("malformed agent reply");
  std::string_view value;
  if (root[key].get(value) != simdjson::SUCCESS) return err("the agent did not say its {}", key);
  return std::string(value);
}

// The process loads memprof's Ruby code and extension from the paths memprof has them at: a
// process with mounts of its own (a container) may not have them.
Status visible_to(pid_t pid, const std::string& path) {
  if (proc::same_mount_namespace(pid)) return ok_status();
  std::error_code error;
  if (std::filesystem::exists(proc::path_from_here(pid, path), error)) return ok_status();
  return err("process {} has mounts of its own (a container?), and memprof's {} is not in its "
             "filesystem: run memprof inside it, or make {} visible there",
             pid, path, std::filesystem::path(path).parent_path().string());
}

}  // namespace

Result<AttachOutcome> ensure_agent(pid_t pid) {
  AttachOutcome outcome;
  if (agent_listening(pid)) return outcome;
  MEMPROF_TRY_STATUS(inject::check_can_inject(pid));
  MEMPROF_TRY(agent, agent_library());
  MEMPROF_TRY(readable, inject::make_readable_for(pid, agent));
  inject::InjectOptions options;
  // Loaded earlier and detached since: dlopen does not run constructors twice, so the injector
  // starts the agent's thread itself.
  if (mapped_agent(pid)) options.then_call = "memprof_agent_start";
  auto injected = inject::load_library(pid, readable, options);
  (void)inject::remove_private_copy(pid, readable);
  if (!injected.ok()) return injected.error();
  outcome.injected = true;
  outcome.pause_ms = static_cast<double>(injected->pause.count()) / 1000.0;
  MEMPROF_TRY_STATUS(wait_for_socket(pid));
  return outcome;
}

namespace {

// Whether the agent of `pid`, if any, has the gem loaded (attached, or run by `memprof run`).
bool memprof_loaded(pid_t pid) {
  if (!agent_listening(pid)) return false;
  auto hello = agent_request(pid, "hello");
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  bool loaded = false;
  if (hello.ok() && parser.parse(*hello).get(root) == simdjson::SUCCESS) read_field(root, "memprof_loaded", loaded);
  return loaded;
}

}  // namespace

Result<AttachOutcome> load_memprof(pid_t pid) {
  if (memprof_loaded(pid)) return AttachOutcome{};
  MEMPROF_TRY(target, find_ruby(pid));
  MEMPROF_TRY(lib, gem_entry_file());
  MEMPROF_TRY_STATUS(visible_to(pid, lib));  // before anything is injected
  MEMPROF_TRY(outcome, ensure_agent(pid));
  MEMPROF_TRY(hello, agent_request(pid, "hello"));
  auto version = json_string_field(hello, "ruby");
  if (!version.ok())
    return err("process {}: the agent finds no Ruby it supports (memprof attaches to Ruby 3.1 "
               "to 3.4)",
               pid);
  MEMPROF_TRY(extension, choose_extension(pid, *version, target, installed_extensions()));
  MEMPROF_TRY_STATUS(visible_to(pid, extension.path));
  MEMPROF_TRY(loaded, agent_request(pid, "load", lib + "\n" + extension.path, kReplyTimeout, RunsIn::kRuby));
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(loaded).get(root) == simdjson::SUCCESS) read_field(root, "loaded", outcome.loaded);
  return outcome;
}

Result<AttachOutcome> attach_ruby(pid_t pid) {
  MEMPROF_TRY(outcome, load_memprof(pid));
  MEMPROF_TRY(status, ruby_request(pid, "start"));
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  bool started = false;
  if (parser.parse(status).get(root) == simdjson::SUCCESS) read_field(root, "started", started);
  outcome.started = started;
  outcome.status_json = std::move(status);
  return outcome;
}

}  // namespace memprof::attach
