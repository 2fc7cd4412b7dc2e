// The agent's life: loaded into a process (LD_PRELOAD by `memprof run`, or dlopen by the
// injector for `memprof attach`), its constructor only looks up Ruby's C API (dlsym) and starts
// one thread -- no Ruby call, no hook -- which serves the control socket until a `detach`
// request ends it. Nothing here may end or crash the host process: no exception leaves the
// thread, no exit/abort/assert.
//
// Fork: only the forking thread survives in the child, so the agent's thread and socket do not;
// a pthread_atfork child handler starts fresh ones for the child (puma and unicorn workers get
// their own agent), except in the children the agent forks itself for heap dumps. The child's
// new thread opens its socket, then ends the trace and native sessions copied from the parent
// before it serves a request, which restores every byte they patched: a worker forked while its
// master was traced is then like any other (it can be traced itself, and pays for no hook).
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "agent/control_server.h"
#include "agent/protocol.h"
#include "agent/recording_sessions.h"
#include "agent/stale_sockets.h"
#include "agent/request_handler.h"
#include "agent/ruby_calls.h"
#include "agent/ruby_runtime.h"
#include "agent/ruby_service.h"
#include "agent/ruby_vm_end_watch.h"
#include "core/hook/hook_change.h"
#include "core/util/raw_sleep.h"
#include "native/native_session.h"
#include "tracer/trampoline.h"

namespace memprof::agent {
namespace {

// The Ruby runtime's job slot is registered with Ruby once per process and must outlive every
// agent thread (a forked child inherits the registration): never destroyed.
//
// Both are made by the agent's constructor (make_ruby_objects), before it registers the fork
// handler and before it starts its thread, and never change after; reading them is one atomic
// load. They were function-local statics made by the agent thread on first use: a fork while
// that thread was inside the initialisation left the static's guard "in progress" in the child,
// held by a thread that does not exist there, and the child handler's ruby_runtime() waited in
// __cxa_guard_acquire forever (the child hung inside fork()). The fork child handler must take
// no lock and wait on no guard that another thread could hold at fork time.
std::atomic<RubyRuntime*> g_ruby_runtime{nullptr};
std::atomic<RubyService*> g_ruby_service{nullptr};

// find_ruby_api is only dlsym lookups: no Ruby call, safe in the constructor.
void make_ruby_objects() {
  if (g_ruby_runtime.load(std::memory_order_acquire) != nullptr) return;
  auto api = find_ruby_api();
  if (!api) return;
  auto* runtime = new (std::nothrow) RubyRuntime(*api);
  if (runtime == nullptr) return;
  g_ruby_service.store(new (std::nothrow) RubyService(*runtime), std::memory_order_release);
  g_ruby_runtime.store(runtime, std::memory_order_release);
}

RubyRuntime* ruby_runtime() { return g_ruby_runtime.load(std::memory_order_acquire); }
RubyService* ruby_service() { return g_ruby_service.load(std::memory_order_acquire); }

// Guards starting; constant-initialized, so that it exists before any constructor runs (the
// agent's constructor may run before this file's dynamic initializers). A fork child rebuilds
// it: the parent's agent thread may have held it.
constinit std::mutex g_start_mutex;
constinit bool g_running = false;

// `memprof run` loads the gem itself, before the program's first line (lib/memprof/autostart.rb
// in RUBYOPT), and names its lib/memprof.rb here.
constexpr const char* kPreloadedGemVariable = "MEMPROF_AGENT_LIB";

void log_problem(const std::string& message) {
  // The agent has no terminal of its own; stderr is the host's. One line, only for problems
  // the user needs to know about (the socket could not be made).
  std::string line = "memprof agent (pid " + std::to_string(::getpid()) + "): " + message + "\n";
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

// The agent thread's listening socket, for a forked child to close: a child that kept it open
// (a shell's subshell, a preforked worker) kept the socket file answering after this process
// exec'd or ended, and a CLI's connection then waited in a backlog nobody accepts, to be reset
// when the child ended (seen following an exec chain through pyenv's shims).
constinit std::atomic<int> g_listening_fd{-1};
// The connection whose request the agent thread is handling, for a forked child to close too:
// a child forked meanwhile (a dump's, the app's) kept the CLI waiting for an end of file after
// this process was killed, as long as the child lived (a hung dump child: forever).
constinit std::atomic<int> g_connection_fd{-1};

// Publishes a descriptor in `slot` for as long as it lives.
class PublishedFd {
 public:
  PublishedFd(std::atomic<int>& slot, int fd) : slot_(slot) { slot_.store(fd, std::memory_order_release); }
  PublishedFd(const PublishedFd&) = delete;
  PublishedFd& operator=(const PublishedFd&) = delete;
  ~PublishedFd() { slot_.store(-1, std::memory_order_release); }

 private:
  std::atomic<int>& slot_;
};

// The sessions the agent thread serves, for a forked child to end (see the top); the child's
// copy, once its fork handler took it, until its new thread has ended them. The child owns
// them: the handler that did in the parent lives on a stack nothing will unwind.
constinit std::atomic<RecordingSessions*> g_serving_sessions{nullptr};
constinit std::atomic<RecordingSessions*> g_inherited_sessions{nullptr};

// The process's end removes the socket file: the agent's thread, whose server would remove it on
// detach, is never unwound (an attached app that ended normally, every `memprof run` child, left
// its file for the next sweep). Only by the process serving it: a forked child has its own
// pid's. Run by the library's destructor (below), which exit() runs after the exit handlers
// registered after the agent was loaded (an app's handler that waits after Ruby's VM has ended
// still gets its requests answered, and refused as they should) and before those registered
// before it (a preloaded agent's own wait for the trace's last reads: the destructor waits first).
void remove_socket_at_exit() {
  if (g_listening_fd.load(std::memory_order_acquire) >= 0) ::unlink(socket_path(::getuid(), ::getpid()).c_str());
}

void end_inherited_sessions() {
  std::unique_ptr<RecordingSessions> inherited(g_inherited_sessions.exchange(nullptr));
  if (inherited != nullptr) inherited->end_all();
}

void serve() {
  tracer::ignore_this_thread();
  native::ignore_this_thread();
  auto server = ControlServer::open(::getuid(), ::getpid());
  // Once the socket exists, so that `-p CHILD` finds it (a request waits in the backlog): ending
  // a copied ruby:gc waits for the child's Ruby to run a job.
  end_inherited_sessions();
  if (!server.ok()) {
    log_problem(server.message());
    return;
  }
  PublishedFd published(g_listening_fd, server->listening_fd());
  RequestHandler handler(ruby_runtime(), ruby_service());
  struct Serving {  // declared after the handler: unpublished before its sessions end
    explicit Serving(RecordingSessions& sessions) { g_serving_sessions.store(&sessions, std::memory_order_release); }
    ~Serving() { g_serving_sessions.store(nullptr, std::memory_order_release); }
  } serving(handler.sessions());
  if (const char* lib = std::getenv(kPreloadedGemVariable); lib != nullptr && *lib != '\0')
    handler.adopt_preloaded_gem(lib);
  while (!handler.detach_requested()) {
    // While a trace runs, a reader that stopped reading (a killed CLI) is noticed.
    if (handler.sessions().active() && !server->wait_for_connection(std::chrono::seconds(1))) {
      handler.sessions().end_abandoned();
      continue;
    }
    auto connection = server->accept();
    if (!connection.ok()) {
      log_problem(connection.message());
      return;
    }
    PublishedFd handling(g_connection_fd, connection->get());
    auto frame = read_frame(connection->get(), kMaxRequestBytes, std::chrono::seconds(5));
    std::string reply;
    if (!frame.ok()) {
      reply = encode_reply_error(frame.message());
    } else {
      auto request = decode_request(*frame);
      reply = request.ok() ? handler.handle(*request, connection->get()) : encode_reply_error(request.message());
    }
    if (handler.detach_requested()) server->remove_file();
    (void)write_frame(connection->get(), reply);
    handler.sessions().after_reply();
  }
}

void* thread_main(void*) {
  try {
    serve();
  } catch (...) {
    // Out of memory in a reply, most likely: the agent ends, the process goes on.
    log_problem("stopped after an internal error");
  }
  std::lock_guard lock(g_start_mutex);
  g_running = false;
  return nullptr;
}

int start_thread() {
  std::lock_guard lock(g_start_mutex);
  if (g_running) return 0;
  // The thread takes no signal meant for the process (Ruby's SIGVTALRM, the app's SIGTERM).
  // SIGTRAP excepted, which only an int3 sends: an entry hook holds the function's entry with
  // one while the program's threads asleep in the kernel are left asleep, which it does only
  // when no thread blocks SIGTRAP (entry_trap.h). With this thread blocking it, every hook
  // written by a program thread (the trace's dlopen watch) signalled every thread, cutting
  // each sleep short (EINTR).
  sigset_t all, previous;
  sigfillset(&all);
  sigdelset(&all, SIGTRAP);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  int error = pthread_create(&thread, &attributes, thread_main, nullptr);
  pthread_attr_destroy(&attributes);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (error != 0) return error;
  pthread_setname_np(thread, "memprof-agent");
  g_running = true;
  return 0;
}

void after_fork_in_child() {
  // The parent's trace and native sessions are the parent's: nobody reads the child's copies,
  // which only pass calls through until the new thread ends them -- if the fork copied them
  // whole (hook_change.h); else they stay as they are, frozen. First: it also puts back the
  // int3 of a hook being installed at the fork, which this handler (close may be traced) and
  // the thread it starts (every signal blocked: SIGTRAP would kill the process) could reach.
  hook::settle_hooks_after_fork();
  if (int parents = g_listening_fd.exchange(-1); parents >= 0) ::close(parents);
  if (int parents = g_connection_fd.exchange(-1); parents >= 0) ::close(parents);
  // The parent's agent thread does not exist here; a lock it held stays held: start over.
  bool was_running = g_running;
  RecordingSessions* inherited = g_serving_sessions.exchange(nullptr, std::memory_order_acq_rel);
  // Forked again before this process's thread took its own copy: that copy is the one to end.
  if (inherited == nullptr) inherited = g_inherited_sessions.load(std::memory_order_acquire);
  g_inherited_sessions.store(hook::hooks_frozen() ? nullptr : inherited, std::memory_order_release);
  tracer::stop_tracing_in_child();
  native::stop_recording_in_child();
  forget_sessions_in_child();
  forget_vm_users_in_child();
  new (&g_start_mutex) std::mutex;
  g_running = false;
  if (forking_for_handler() || !was_running) return;
  // Atomic loads only (see g_ruby_runtime): nothing here can wait for the parent's threads.
  if (RubyRuntime* ruby = ruby_runtime(); ruby != nullptr) ruby->reset_after_fork();
  if (RubyService* service = ruby_service(); service != nullptr) service->reset_after_fork();
  start_thread();
}

// memprof trace/native -- CMD: the program's first instruction waits (at most 10 s) until the
// session has started, so that nothing is missed. The CLI sets the variable to "1"; the first
// program makes it its PID, so that a program it execs (the same process: a wrapper script
// such as an rbenv shim exec'ing ruby) can wait for the CLI too, and its children do not.
enum class Hold { kNone, kFirstProgram, kExecedProgram };

// Whether the CLI that launched this process still follows it: its follow marker names a live
// process. It is gone once the recording stopped (--duration, Ctrl-C) or could not follow.
bool followed_by_cli() { return follow_marker_names_live_cli(follow_marker_path(::getuid(), ::getpid())); }

// Called before the agent's thread exists: setenv must not race a getenv.
Hold claims_hold() {
  const char* value = std::getenv(kTraceHoldVariable);
  if (value == nullptr) return Hold::kNone;
  const std::string pid = std::to_string(::getpid());
  if (std::strcmp(value, "1") == 0) {
    ::setenv(kTraceHoldVariable, pid.c_str(), 1);
    return Hold::kFirstProgram;
  }
  return pid == value && followed_by_cli() ? Hold::kExecedProgram : Hold::kNone;
}

// At most 10 s for the CLI's start to come, and then as long as it takes to be handled (up to
// 5 minutes): hooking every function of libc took more than 10 s, and the program went on
// untraced while the CLI still thought it held.
void hold_until_traced(Hold hold) {
  constexpr int kWaitForRequestMs = 10'000, kWaitForStartMs = 300'000;
  for (int waited_ms = 0; !session_started(); ++waited_ms) {
    if (waited_ms >= kWaitForRequestMs && (!session_starting() || waited_ms >= kWaitForStartMs)) return;
    // An exec'd program stops waiting as soon as the CLI stops following.
    if (hold == Hold::kExecedProgram && waited_ms % 10 == 9 && !followed_by_cli()) return;
    sleep_without_libc(std::chrono::milliseconds(1));  // not usleep: the trace may be counting it
  }
}

}  // namespace
}  // namespace memprof::agent

// Starts the agent's thread unless it runs; 0 or an errno. The injector calls it again to
// re-attach a process whose agent was detached (dlopen does not rerun constructors).
extern "C" __attribute__((visibility("default"))) int memprof_agent_start() {
  try {
    return memprof::agent::start_thread();
  } catch (...) {
    return ENOMEM;
  }
}

__attribute__((constructor)) static void memprof_agent_loaded() {
  // Before the fork handler exists, so that no fork can run it while these are being made.
  memprof::agent::make_ruby_objects();
  pthread_atfork(nullptr, memprof::agent::count_fork_in_parent, memprof::agent::after_fork_in_child);
  std::atexit(memprof::agent::wait_for_sessions_at_exit);
  const auto hold = memprof::agent::claims_hold();
  // Said before the agent's thread can take a request: a trace started now finds Ruby not
  // started yet (recording_sessions.h).
  memprof::agent::note_launch_held(hold != memprof::agent::Hold::kNone);
  if (memprof_agent_start() == 0 && hold != memprof::agent::Hold::kNone) memprof::agent::hold_until_traced(hold);
  memprof::agent::note_launch_held(false);
}

__attribute__((destructor)) static void memprof_agent_unloaded() {
  memprof::agent::wait_for_sessions_at_exit();
  memprof::agent::remove_socket_at_exit();
}
