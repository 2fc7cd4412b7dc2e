#include "agent/ruby_gc_events.h"

#include <pthread.h>

#include <atomic>
#include <optional>
#include <string_view>

#include "agent/request_handler.h"
#include "core/hook/entry_hook.h"
#include "core/hook/got_hook.h"
#include "core/hook/loaded_object.h"
#include "tracer/tick_clock.h"
#include "tracer/trampoline.h"

namespace memprof::agent {
namespace {

// ruby/internal/event.h
constexpr uint32_t kGcStart = 0x400000;
constexpr uint32_t kGcEnter = 0x2000000;
constexpr uint32_t kGcExit = 0x4000000;

struct GcApi {
  RubyValue (*tracepoint_new)(RubyValue, uint32_t, void (*)(RubyValue, void*), void*) = nullptr;
  RubyValue (*tracepoint_enable)(RubyValue) = nullptr;
  RubyValue (*tracepoint_disable)(RubyValue) = nullptr;
  void* (*tracearg_from_tracepoint)(RubyValue) = nullptr;
  uint32_t (*tracearg_event_flag)(void*) = nullptr;
  void (*register_address)(RubyValue*) = nullptr;
  size_t (*gc_count)() = nullptr;  // optional
};

std::optional<GcApi> find_gc_api() {
  GcApi api;
  resolve(api.tracepoint_new, "rb_tracepoint_new");
  resolve(api.tracepoint_enable, "rb_tracepoint_enable");
  resolve(api.tracepoint_disable, "rb_tracepoint_disable");
  resolve(api.tracearg_from_tracepoint, "rb_tracearg_from_tracepoint");
  resolve(api.tracearg_event_flag, "rb_tracearg_event_flag");
  resolve(api.register_address, "rb_gc_register_address");
  resolve(api.gc_count, "rb_gc_count");
  if (!api.tracepoint_new || !api.tracepoint_enable || !api.tracepoint_disable || !api.tracearg_from_tracepoint ||
      !api.tracearg_event_flag || !api.register_address)
    return std::nullopt;
  return api;
}

// The TracePoint and its callback's state. GC runs on one thread at a time (the GVL, or the
// VM barrier with Ractors), so plain variables do; the callback allocates nothing.
GcApi g_gc_api;
RubyValue g_tracepoint = 0;  // registered with Ruby's GC while enabled
uint32_t g_source = 0;
uint64_t g_enter_ticks = 0;
bool g_started = false;

void on_gc_event(RubyValue tracepoint, void*) {
  uint32_t event = g_gc_api.tracearg_event_flag(g_gc_api.tracearg_from_tracepoint(tracepoint));
  if (event & kGcEnter) {
    g_enter_ticks = tracer::now_ticks();
    g_started = false;
  } else if (event & kGcStart) {
    g_started = true;
  } else if (event & kGcExit) {
    tracer::record_event(g_source, g_enter_ticks, tracer::now_ticks(), g_gc_api.gc_count ? g_gc_api.gc_count() : 0,
                         g_started);
  }
}

// Ruby before 3.3 runs GC event hooks on a new Ractor's thread before that thread has a frame,
// and crashes reading it when a GC comes then (Ruby bug #18464, fixed in 3.3). Its
// ruby_single_main_ractor is NULL from the first Ractor.new on: set on the creating thread,
// which then creates the new Ractor's thread through Ruby's own pthread_create import.
bool before_ruby_3_3(const RubyApi& ruby) {
  return ruby.api_version[0] < 3 || (ruby.api_version[0] == 3 && ruby.api_version[1] < 3);
}

const void* const* g_single_main_ractor = nullptr;
using CreateThread = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
CreateThread g_real_create_thread = nullptr;  // published before the slot is patched
std::atomic<bool> g_tracing = false;
std::atomic<bool> g_stopped_for_ractor = false;

// Ruby's pthread_create while ruby:gc is traced on such a Ruby. The first thread made once
// Ruby went multi-Ractor is the first Ractor's: the TracePoint goes off before it exists.
// The caller is a Ruby thread holding the main Ractor's lock (only Ruby calls through
// Ruby's own import), where the TracePoint may be disabled.
int create_thread_watching_ractors(pthread_t* thread, const pthread_attr_t* attributes,
                                   void* (*start)(void*), void* argument) {
  if (g_tracing.load(std::memory_order_acquire) && *g_single_main_ractor == nullptr &&
      g_tracing.exchange(false)) {
    g_gc_api.tracepoint_disable(g_tracepoint);
    g_stopped_for_ractor.store(true, std::memory_order_release);
  }
  return __atomic_load_n(&g_real_create_thread, __ATOMIC_ACQUIRE)(thread, attributes, start, argument);
}

// `booted`: Ruby has made its main Ractor (before that, ruby_single_main_ractor is null too).
Result<std::unique_ptr<hook::GotHook>> watch_for_ractors(const RubyRuntime& ruby, bool booted) {
  resolve(g_single_main_ractor, "ruby_single_main_ractor");
  if (g_single_main_ractor == nullptr) return err("ruby:gc: Ruby {} has no ruby_single_main_ractor", ruby.version());
  if (booted && *g_single_main_ractor == nullptr)
    return err("ruby:gc: this process has started Ractors, and Ruby {} crashes when a Ractor starts "
               "while a GC event hook is on (Ruby bug #18464, fixed in 3.3)",
               ruby.version());
  // The object that holds Ruby's C API: libruby, or a ruby with it linked in.
  MEMPROF_TRY(ruby_object, hook::object_containing(reinterpret_cast<const void*>(g_gc_api.tracepoint_new)));
  hook::GotHookOptions options;
  options.object_filter = [path = ruby_object.path](std::string_view object) { return object == path; };
  options.follow_dlopen = false;
  options.publish_original = reinterpret_cast<void**>(&g_real_create_thread);
  auto hook = hook::GotHook::install("pthread_create", reinterpret_cast<void*>(&create_thread_watching_ractors),
                                     options);
  if (!hook.ok())
    return err("ruby:gc: cannot watch for a first Ractor, which Ruby {} would crash on: {}", ruby.version(),
               hook.message());
  return std::move(*hook);
}

// Makes (once) and enables the TracePoint. On a Ruby thread holding the GVL, under the lock
// Ractor.new needs: no Ractor starts between the check and the enabling.
Result<std::string> enable_tracepoint() {
  if (g_single_main_ractor != nullptr && *g_single_main_ractor == nullptr)
    return err("ruby:gc: a Ractor started just now, and this Ruby crashes when one starts while a GC event "
               "hook is on (Ruby bug #18464, fixed in 3.3)");
  if (g_tracepoint == 0) {
    g_tracepoint = g_gc_api.tracepoint_new(0, kGcStart | kGcEnter | kGcExit, on_gc_event, nullptr);
    g_gc_api.register_address(&g_tracepoint);
  }
  g_tracing = true;
  g_gc_api.tracepoint_enable(g_tracepoint);
  return std::string();
}

// A launched Ruby is traced from before its VM exists. ruby_options is where the `ruby`
// program goes once its VM is made (ruby_init) and before anything runs in it: it loads
// RubyGems (a Rails app's boot has nine GCs by then) and the script. Its entry is the first
// moment the TracePoint can be made, on the main thread, which holds the GVL.
using RubyOptions = void* (*)(int, char**);
RubyOptions g_original_ruby_options = nullptr;  // written before the jump, never cleared

void* enable_at_ruby_options(int argc, char** argv) {
  (void)enable_tracepoint();  // no Ractor exists before the program runs
  return g_original_ruby_options(argc, argv);
}

}  // namespace

Result<std::unique_ptr<RubyGcEvents>> RubyGcEvents::prepare(RubyRuntime& ruby, uint32_t source, bool booted) {
  auto api = find_gc_api();
  if (!api) return err("ruby:gc: this Ruby lacks the TracePoint C API");
  g_gc_api = *api;
  std::unique_ptr<RubyGcEvents> events(new RubyGcEvents(ruby));
  if (before_ruby_3_3(ruby.api())) {
    MEMPROF_TRY(watch, watch_for_ractors(ruby, booted));
    events->ractor_watch_ = std::move(watch);
  }
  g_source = source;
  g_stopped_for_ractor = false;
  return events;
}

Result<std::unique_ptr<RubyGcEvents>> RubyGcEvents::enable(RubyRuntime& ruby, uint32_t source) {
  MEMPROF_TRY(events, prepare(ruby, source, /*booted=*/true));
  MEMPROF_TRY_STATUS(ruby.run([](const RubyApi&) { return enable_tracepoint(); }, kRubyTimeout));
  return std::move(events);
}

Result<std::unique_ptr<RubyGcEvents>> RubyGcEvents::enable_when_ruby_starts(RubyRuntime& ruby, uint32_t source) {
  RubyOptions ruby_options = nullptr;
  resolve(ruby_options, "ruby_options");
  if (ruby_options == nullptr) return err("ruby:gc: Ruby {} has no ruby_options to start from", ruby.version());
  MEMPROF_TRY(events, prepare(ruby, source, /*booted=*/false));
  MEMPROF_TRY(watch, hook::EntryHook::install(reinterpret_cast<void*>(ruby_options),
                                              reinterpret_cast<void*>(&enable_at_ruby_options),
                                              {.publish_original = reinterpret_cast<void**>(&g_original_ruby_options)}));
  events->start_watch_ = std::move(watch);
  return std::move(events);
}

bool RubyGcEvents::stopped_for_ractor() { return g_stopped_for_ractor.exchange(false); }

RubyGcEvents::~RubyGcEvents() {
  // First the way in: a main thread past it holds the GVL until its TracePoint is on, so the
  // job below, which needs the GVL, runs after that. Before Ruby has started there is nothing
  // to disable (run() says so at once).
  start_watch_.reset();
  // The TracePoint object stays registered (and disabled): a later trace enables it again.
  (void)ruby_.run(
      [](const RubyApi&) -> Result<std::string> {
        if (g_tracing.exchange(false)) g_gc_api.tracepoint_disable(g_tracepoint);
        return std::string();
      },
      kRubyTimeout);
  // ractor_watch_ goes after: Ruby's pthread_create is its own again.
}

}  // namespace memprof::agent
