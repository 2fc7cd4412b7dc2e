#include "agent/ruby_calls.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "native/recording_window.h"

namespace memprof::agent {

namespace {

// The Ruby thread's body, evaluated at the top level (TOPLEVEL_BINDING); constants are written
// from the top level all the same (::File, ::IO, ...), as code evaluated in whatever frame a
// job interrupted once had to be (inside `module Rack`, `File` is Rack::File). The agent
// passes "LIB\nEXTENSION\nREQUEST_FD\nREPLY_FD" in an instance variable of Memprof; the IOs
// never close the agent's descriptors (autoclose: false), so that a forked child's garbage
// collector cannot close a descriptor number reused since.
constexpr const char* kStartThread = R"ruby(
::Thread.new(*::Memprof.remove_instance_variable(:@agent_boot).split("\n")) do |lib, ext, request_fd, reply_fd|
  # Nothing this thread allocates is the app's (the gem's tracker is told once it is loaded).
  ::Memprof::Native.ignore_this_thread if defined?(::Memprof::Native)
  ::Thread.current.name = "memprof-agent"
  # A time slice of 100 ms >> 3: the app's threads wait at most ~12 ms for the GVL while this
  # one loads the gem and reads the tables out.
  ::Thread.current.priority = -3
  ::Thread.current.report_on_exception = false
  requests = ::IO.for_fd(::Kernel.Integer(request_fd), autoclose: false)
  replies = ::IO.for_fd(::Kernel.Integer(reply_fd), autoclose: false)
  replies.sync = true
  efaults = 0
  begin
    unless defined?(::Memprof::Native)
      ::Memprof.instance_variable_set(:@agent_extension, ext)
      begin
        require lib
      ensure
        ::Memprof.remove_instance_variable(:@agent_extension)
      end
      ::Memprof::Native.ignore_this_thread
    end
    require ::File.join(::File.dirname(lib), "memprof", "agent")
  rescue ::Exception => e
    # Ruby 3.4's require hands a String's buffer to realpath() without the GVL; an app
    # looping GC.compact can move it meanwhile (a Ruby bug). The file that failed is not
    # marked loaded: requiring it again is safe.
    retry if e.is_a?(::Errno::EFAULT) && (efaults += 1) < 8
    message = "0\nerror\nloading memprof into the process: #{e.class}: #{e.message}".b
    replies.write([message.bytesize].pack("V"), message)
  else
    ::Memprof::Agent.serve(requests, replies)
  end
end
nil
)ruby";

constexpr const char* kHandle =
    "::Memprof::Agent.handle_forked(::Memprof.remove_instance_variable(:@agent_request))";
constexpr std::string_view kErrorPrefix = "error\n";  // handle_forked's failure
constexpr const char* kListChanged =
    "::Memprof.instance_variable_set(:@agent_changed, [*(::Ractor.current if defined?(::Ractor)), *::Thread.list])";
// (No method the agent has not called before: a call cache the parent makes after the fork is
// in no dump's own objects, and the next dump would show it as new.)
constexpr const char* kForgetRequest =
    "::Memprof.remove_instance_variable(:@agent_request); "
    "::Memprof.remove_instance_variable(:@agent_changed)";
constexpr const char* kCleanUp =
    "::Memprof::Agent.clean_up_after(::Memprof.remove_instance_variable(:@agent_request), "
    "Integer(::Memprof.remove_instance_variable(:@agent_child)))";

std::atomic<bool> g_forking{false};
const RubyApi* g_api = nullptr;  // for the rb_protect callbacks, which take one VALUE

// Exception#inspect ("#<NameError: message>"): full_message would read $stderr and the
// terminal, which a Ruby still booting (memprof run) may not have yet.
RubyValue call_message(RubyValue exception) {
  return g_api->funcallv(exception, g_api->intern("inspect"), 0, nullptr);
}

RubyValue call_bytesize(RubyValue string) {
  return g_api->funcallv(string, g_api->intern("bytesize"), 0, nullptr);
}

// Binding#eval on TOPLEVEL_BINDING. rb_eval_string evaluates in the Ruby frame the job
// interrupted and raises "Can't eval on top of Fiber or Thread" where there is none: a thread
// that has just started or is ending runs interrupts too (seen attaching while an app started
// two threads).
RubyValue call_eval(RubyValue source) {
  const RubyApi& api = *g_api;
  RubyValue name = api.str_new("TOPLEVEL_BINDING", 16);
  RubyValue binding = api.funcallv(*api.object_class, api.intern("const_get"), 1, &name);
  return api.funcallv(binding, api.intern("eval"), 1, &source);
}

// `source` evaluated at the top level under rb_protect (state != 0: an exception, pending).
RubyValue eval_protected(const RubyApi& api, const char* source, int* state) {
  g_api = &api;
  RubyValue code = api.str_new(source, static_cast<long>(std::strlen(source)));
  return api.protect(call_eval, code, state);
}

RubyValue nil(const RubyApi& api) {
  int state = 0;
  return eval_protected(api, "nil", &state);
}

// The bytes of a Ruby String (the handler returns one), copied.
Result<std::string> to_string(const RubyApi& api, RubyValue value) {
  int state = 0;
  RubyValue size = api.protect(call_bytesize, value, &state);
  if (state != 0) {
    api.set_errinfo(nil(api));
    return err("the agent's Ruby handler returned something other than a String");
  }
  volatile RubyValue string = value;
  const char* bytes = api.string_value_ptr(&string);
  return std::string(bytes, static_cast<size_t>(api.num2long(size)));
}

// The pending exception as an error value, then cleared so that Ruby goes on as before.
Error take_exception(const RubyApi& api, const char* doing) {
  RubyValue exception = api.errinfo();
  int state = 0;
  RubyValue message = api.protect(call_message, exception, &state);
  std::string text = "(no message)";
  if (state == 0) {
    auto converted = to_string(api, message);
    if (converted.ok()) text = std::move(*converted);
  }
  api.set_errinfo(nil(api));
  // One line for the CLI's one-line errors.
  if (size_t newline = text.find('\n'); newline != std::string::npos) text.resize(newline);
  return err("{}: {}", doing, text);
}

void set_memprof_ivar(const RubyApi& api, const char* name, const std::string& value) {
  RubyValue module = api.define_module("Memprof");
  api.ivar_set(module, api.intern(name),
               api.str_new(value.data(), static_cast<long>(value.size())));
}

Result<std::string> eval(const RubyApi& api, const char* source, const char* doing) {
  int state = 0;
  RubyValue value = eval_protected(api, source, &state);
  if (state != 0) return take_exception(api, doing);
  return to_string(api, value);
}

}  // namespace

Status start_ruby_thread(const RubyApi& api, const std::string& lib_file,
                         const std::string& extension_file, int request_fd, int reply_fd) {
  g_api = &api;
  set_memprof_ivar(api, "@agent_boot",
                   fmt::format("{}\n{}\n{}\n{}", lib_file, extension_file, request_fd, reply_fd));
  int state = 0;
  eval_protected(api, kStartThread, &state);
  if (state != 0) return take_exception(api, "starting memprof's Ruby thread");
  return ok_status();
}

namespace {

RubyValue call_gc(RubyValue) {
  g_api->gc();
  return 0;  // Qfalse: not read
}

}  // namespace

namespace {

std::atomic<bool> g_collection_at_exit_registered{false};
std::atomic<bool> g_collection_at_exit_wanted{false};
std::atomic<int64_t> g_collection_at_exit_us{-1};

void collect_at_exit(RubyValue) {
  if (!g_collection_at_exit_wanted.load(std::memory_order_acquire)) return;
  native::ScopedInternal internal;  // the collection's own blocks (its mark stack) are memprof's
  const auto start = std::chrono::steady_clock::now();
  g_api->gc();
  const auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  g_collection_at_exit_us.store(took.count(), std::memory_order_release);
}

RubyValue call_set_end_proc(RubyValue) {
  g_api->set_end_proc(&collect_at_exit, 0);
  return 0;
}

}  // namespace

Status register_collection_at_exit(const RubyApi& api) {
  if (api.set_end_proc == nullptr || api.gc == nullptr) return err("this Ruby exports no rb_set_end_proc or rb_gc");
  if (g_collection_at_exit_registered.load(std::memory_order_acquire)) return ok_status();
  g_api = &api;
  int state = 0;
  api.protect(call_set_end_proc, 0, &state);
  if (state != 0) return take_exception(api, "registering the collection at exit");
  g_collection_at_exit_registered.store(true, std::memory_order_release);
  return ok_status();
}

void set_collection_at_exit(bool wanted) noexcept {
  g_collection_at_exit_wanted.store(wanted, std::memory_order_release);
}

double collection_at_exit_ms() noexcept {
  const int64_t us = g_collection_at_exit_us.load(std::memory_order_acquire);
  return us < 0 ? -1.0 : static_cast<double>(us) / 1000.0;
}

Result<std::string> collect_garbage(const RubyApi& api) {
  if (api.gc == nullptr || api.gc_count == nullptr) return err("this Ruby exports no rb_gc");
  g_api = &api;
  const size_t before = api.gc_count();
  const auto start = std::chrono::steady_clock::now();
  int state = 0;
  api.protect(call_gc, 0, &state);
  if (state != 0) return take_exception(api, "collecting garbage");
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return fmt::format(R"({{"ruby":true,"collections":{},"ms":{:.1f}}})", api.gc_count() - before, ms);
}

bool forking_for_handler() { return g_forking.load(std::memory_order_acquire); }

// Ruby cannot fork while other Ractors run: the child waits forever for them (Process.fork
// hangs the same way on Ruby 3.1, 3.3 and 3.4), so the handler would never answer.
Status refuse_fork_beside_ractors(const RubyApi& api) {
  int state = 0;
  RubyValue count = eval_protected(api, "defined?(::Ractor.count) ? ::Ractor.count : 1", &state);
  if (state != 0) return take_exception(api, "counting Ractors");
  if (long ractors = api.num2long(count); ractors > 1) {
    return err("{} Ractors are running, and Ruby cannot fork while Ractors run (the child would "
               "wait for them forever); this needs a fork: try again once only the main Ractor "
               "is left", ractors);
  }
  return ok_status();
}

Result<ForkedHandler> fork_and_handle(const RubyApi& api, const std::string& command) {
  MEMPROF_TRY_STATUS(refuse_fork_beside_ractors(api));
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return err("pipe: {}", std::strerror(errno));
  ScopedFd read_end(pipe_fds[0]);
  ScopedFd write_end(pipe_fds[1]);
  // What the child makes before the handler's Memprof.dump_all (the request, the evaluated
  // handler) is the dump's own: the window opens here and the child inherits it. The gem's
  // extension is loaded (the request needed it), so dlsym finds the symbol and allocates no
  // error message.
  using DumpWindow = void (*)(int);
  const auto dump_window = reinterpret_cast<DumpWindow>(dlsym(RTLD_DEFAULT, "memprof_dump_window"));
  if (dump_window != nullptr) dump_window(1);
  // The child forgets the app's other threads, and with them what their frames hold: the
  // extension first records that, and the roots, from the Ractor and the threads as they are
  // here (ruby/heap_at_fork.h). The list is kept in an instance variable across the fork.
  // The frames of this job are left out of the roots (interrupted_frames_end); an extension of
  // an older gem in the app has only the call without them.
  using ForkedForDump = void (*)(RubyValue, const void*);
  using ForkedForDumpOfOldGems = void (*)(RubyValue);
  auto forked_for_dump = reinterpret_cast<ForkedForDump>(dlsym(RTLD_DEFAULT, "memprof_forked_for_dump_above"));
  auto forked_for_dump_of_old_gems =
      reinterpret_cast<ForkedForDumpOfOldGems>(dlsym(RTLD_DEFAULT, "memprof_forked_for_dump"));
  int listed = 0;
  const RubyValue changed = eval_protected(api, kListChanged, &listed);
  if (listed != 0) {
    api.set_errinfo(nil(api));
    forked_for_dump = nullptr;
    forked_for_dump_of_old_gems = nullptr;
  }
  set_memprof_ivar(api, "@agent_request", command);
  g_forking.store(true, std::memory_order_release);
  auto started = std::chrono::steady_clock::now();
  pid_t child = ::fork();
  auto fork_time = std::chrono::steady_clock::now() - started;
  if (child == 0) {
    // Only this thread exists in the child, holding the GVL; Ruby must forget the others, as
    // its own fork makes it do: Ruby 3.3+'s scheduler would hand the GVL, at the handler's
    // first blocking call (opening the dump), to a thread that was waiting for it in the
    // parent, and wait forever for it to give it back. _exit skips at_exit blocks and
    // finalizers, which belong to the parent.
    if (forked_for_dump != nullptr) {
      forked_for_dump(changed, interrupted_frames_end());
    } else if (forked_for_dump_of_old_gems != nullptr) {
      forked_for_dump_of_old_gems(changed);
    } else {
      api.thread_atfork();
    }
    while (::write(write_end.get(), &kChildReady, 1) < 0 && errno == EINTR) {
    }
    auto result = eval(api, kHandle, "memprof's agent handler");
    std::string_view text = result.ok() ? std::string_view(*result) : result.message();
    const bool failed = !result.ok() || text.starts_with(kErrorPrefix);
    if (result.ok() && failed) text.remove_prefix(kErrorPrefix.size());
    while (!text.empty()) {
      ssize_t n = ::write(write_end.get(), text.data(), text.size());
      if (n <= 0 && errno != EINTR) break;
      if (n > 0) text.remove_prefix(static_cast<size_t>(n));
    }
    ::_exit(failed ? 1 : 0);
  }
  g_forking.store(false, std::memory_order_release);
  int saved_errno = errno;
  if (dump_window != nullptr) dump_window(0);
  // The parent does not need the request any more.
  int state = 0;
  eval_protected(api, kForgetRequest, &state);
  if (state != 0) api.set_errinfo(nil(api));
  if (child < 0) return err("fork: {}", std::strerror(saved_errno));
  return ForkedHandler{child, std::move(read_end),
                       std::chrono::duration_cast<std::chrono::microseconds>(fork_time)};
}

Status clean_up_after_child(const RubyApi& api, const std::string& command, pid_t child) {
  set_memprof_ivar(api, "@agent_request", command);
  set_memprof_ivar(api, "@agent_child", std::to_string(child));
  int state = 0;
  eval_protected(api, kCleanUp, &state);
  if (state != 0) return take_exception(api, "removing the killed child's scratch files");
  return ok_status();
}

}  // namespace memprof::agent
